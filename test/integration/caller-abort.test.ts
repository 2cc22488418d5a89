import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startFaultyUpstream, type FaultMode, type FaultRequest, type FaultyUpstream } from '../fakes/faulty-upstream';
import { call, logsOf, startTestGateway } from '../support/gateway';

/**
 * A caller that leaves releases the upstream: on every route that calls a provider, the
 * upstream connection closes within a bound of the caller leaving, before and after the
 * upstream's headers, and the upstream does not run to completion (no tokens paid for nobody).
 */
let gw: LocalGateway;
let fake: FaultyUpstream;
let promptSlug: string;

beforeAll(async () => {
  // `slow` answers after 8 s; `drip` would take over a minute (270 bytes, one per 250 ms).
  fake = await startFaultyUpstream({ slowMs: 8_000, dripIntervalMs: 250 });
  gw = await startTestGateway();
  const provider = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'faulty', provider: 'openai', api_key: 'sk-faulty', custom_host: `${fake.url}/v1` },
  });
  expect(provider.status, provider.text).toBe(200);
  const prompt = await call(gw, 'POST', '/v1/prompts', {
    body: {
      name: `abort-${Date.now()}`,
      string: JSON.stringify([{ role: 'user', content: 'hi' }]),
      parameters: {},
      model: 'gpt-4o-mini',
      virtual_key: 'faulty',
    },
  });
  expect(prompt.status, prompt.text).toBe(200);
  promptSlug = prompt.body.slug;
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});
beforeEach(() => fake.reset());

const viaCustomHost = (provider: string) => ({
  'x-gateway-provider': provider,
  'x-gateway-custom-host': `${fake.url}/v1`,
  authorization: 'Bearer sk-fault-upstream',
});

const ROUTES: Record<string, { path: () => string; body: unknown; headers: () => Record<string, string> }> = {
  chat: {
    path: () => '/v1/chat/completions',
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
    headers: () => viaCustomHost('openai'),
  },
  embeddings: { path: () => '/v1/embeddings', body: { model: 'text-embedding-3-small', input: 'hi' }, headers: () => viaCustomHost('openai') },
  responses: { path: () => '/v1/responses', body: { model: 'deepseek-chat', input: 'hi' }, headers: () => viaCustomHost('deepseek') },
  messages: {
    path: () => '/v1/messages',
    body: { model: 'gpt-4o-mini', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] },
    headers: () => viaCustomHost('openai'),
  },
  proxy: { path: () => '/v1/some/provider/path', body: { model: 'x' }, headers: () => viaCustomHost('openai') },
  rerank: { path: () => '/v1/rerank', body: { model: 'jina-reranker-v2', query: 'q', documents: ['a', 'b'] }, headers: () => viaCustomHost('jina') },
  'prompts completions': { path: () => `/v1/prompts/${promptSlug}/completions`, body: { variables: {} }, headers: () => ({}) },
};

async function until(condition: () => boolean, withinMs: number, what: string): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Start `route`'s request with the upstream in `mode`; resolves with the caller's abort and the upstream's view. */
async function startThenLeave(route: string, mode: FaultMode, traceId: string): Promise<{ request: FaultRequest; leftAt: number }> {
  const r = ROUTES[route]!;
  const before = fake.requests.length;
  const caller = new AbortController();
  const pending = fetch(`${gw.url}${r.path()}`, {
    method: 'POST',
    signal: caller.signal,
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': gw.adminKey,
      'x-gateway-trace-id': traceId,
      ...r.headers(),
      'x-fault-mode': mode,
      'x-gateway-forward-headers': 'x-fault-mode',
    },
    body: JSON.stringify(r.body),
  }).then((res) => res.text());
  pending.catch(() => {});
  await until(() => fake.requests.length > before, 10_000, `${route} reached the upstream`);
  const request = fake.requests[before]!;
  expect(request.mode).toBe(mode);
  // The caller waits about a second, then leaves.
  await new Promise((res) => setTimeout(res, 1_000));
  const leftAt = Date.now();
  caller.abort();
  await pending.catch(() => {});
  return { request, leftAt };
}

describe('the caller leaving aborts the upstream call', () => {
  for (const [mode, phase] of [
    ['slow', 'before the upstream headers'],
    ['drip', 'after the upstream headers'],
  ] as const) {
    for (const route of Object.keys(ROUTES)) {
      it(`${route}, ${phase}`, async () => {
        const traceId = `abort-${mode}-${route.replace(' ', '-')}-${Date.now()}`;
        const { request, leftAt } = await startThenLeave(route, mode, traceId);
        await fake.connectionClosedWithin(request, 3_000);
        expect(Date.now() - leftAt).toBeLessThan(3_000);
        expect(await request.done).toBe(false); // the upstream never finished its answer
        if (route !== 'proxy' || mode === 'slow') {
          // Recorded as the caller closing the request, not as a gateway failure.
          const logs = await logsOf(gw, `trace_id=${traceId}`);
          expect(logs.body.data.map((r: { status: number }) => r.status)).toEqual([499]);
        }
      });
    }
  }

  it('50 callers leaving leave no upstream connection open, and the gateway answers afterwards', async () => {
    const callers = Array.from({ length: 50 }, () => new AbortController());
    const pending = callers.map((c) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        signal: c.signal,
        headers: {
          'content-type': 'application/json',
          'x-gateway-api-key': gw.adminKey,
          ...viaCustomHost('openai'),
          'x-fault-mode': 'slow',
          'x-gateway-forward-headers': 'x-fault-mode',
        },
        body: JSON.stringify(ROUTES.chat!.body),
      })
        .then((res) => res.text())
        .catch(() => 'left'),
    );
    await until(() => fake.requests.length >= 50, 15_000, 'all 50 requests reached the upstream');
    for (const c of callers) c.abort();
    await Promise.all(pending);
    await Promise.all(fake.requests.map((r) => fake.connectionClosedWithin(r, 3_000)));
    expect((await Promise.all(fake.requests.map((r) => r.done))).filter(Boolean)).toEqual([]);

    const ok = await call(gw, 'POST', '/v1/chat/completions', { body: ROUTES.chat!.body, headers: viaCustomHost('openai') });
    expect(ok.status, ok.text).toBe(200);
  });
});
