import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startFaultyUpstream, type FaultMode, type FaultyUpstream } from '../fakes/faulty-upstream';
import { startTestGateway } from '../support/gateway';

/**
 * The fault matrix, non-streamed rows (issue «Hold under faults»): chat, Responses, Messages
 * and the generic proxy against an upstream that misbehaves in one way per row. Each row
 * asserts what the caller gets, within a time bound, that the upstream connection of the
 * request is closed, and that the gateway answers a normal request afterwards.
 * Streamed rows: fault-matrix-stream.test.ts.
 */
let gw: LocalGateway;
let fake: FaultyUpstream;

beforeAll(async () => {
  fake = await startFaultyUpstream({ dripIntervalMs: 500 });
  gw = await startTestGateway();
  // Each route's code is loaded with its first request (the test gateway's handlers, and the
  // translations loaded on demand): load it now, so that the rows' time bounds measure the
  // fault handling. In a full run on two busy cores the first request took 3.3 s.
  for (const route of Object.keys(ROUTES) as RouteName[]) await healthyAfterwards(route);
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});
beforeEach(() => fake.reset());

type RouteName = 'chat' | 'responses' | 'messages' | 'proxy';

interface Route {
  path: string;
  body: Record<string, unknown>;
  /** Provider: Responses goes through a provider that does not speak it natively, so it is translated. */
  provider: string;
}

const ROUTES: Record<RouteName, Route> = {
  chat: { path: '/v1/chat/completions', provider: 'openai', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] } },
  responses: { path: '/v1/responses', provider: 'deepseek', body: { model: 'deepseek-chat', input: 'hi' } },
  messages: { path: '/v1/messages', provider: 'openai', body: { model: 'gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] } },
  proxy: { path: '/v1/fault/anything', provider: 'openai', body: { model: 'gpt-4o-mini', input: 'hi' } },
};

interface Outcome {
  status: number;
  headers: Headers;
  text: string;
  bytes: number;
  /** The body could not be read to its end (the connection was cut mid-body). */
  broken: boolean;
  ms: number;
}

async function send(route: RouteName, mode: FaultMode, opts: { host?: string; headers?: Record<string, string>; signal?: AbortSignal } = {}): Promise<Outcome> {
  const r = ROUTES[route];
  const started = Date.now();
  const res = await fetch(`${gw.baseUrl}${r.path.slice(3)}`, {
    method: 'POST',
    signal: opts.signal,
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': gw.adminKey,
      'x-gateway-provider': r.provider,
      'x-gateway-custom-host': `${opts.host ?? fake.url}/v1`,
      authorization: 'Bearer sk-fault-upstream',
      'x-fault-mode': mode,
      'x-gateway-forward-headers': 'x-fault-mode',
      ...opts.headers,
    },
    body: JSON.stringify(r.body),
  });
  let text = '';
  let bytes = 0;
  let broken = false;
  try {
    // Large bodies are counted, not kept.
    for await (const chunk of res.body ?? []) {
      bytes += chunk.length;
      if (bytes <= 1_000_000) text += Buffer.from(chunk).toString('utf8');
    }
  } catch {
    broken = true;
  }
  return { status: res.status, headers: res.headers, text, bytes, broken, ms: Date.now() - started };
}

/** The error's code in the route's shape (Messages: Anthropic's, which has only a type). */
function errorCode(route: RouteName, out: Outcome): string | undefined {
  const body = JSON.parse(out.text) as { type?: string; error?: { code?: string; type?: string } };
  if (route === 'messages') {
    expect(body.type).toBe('error');
    return undefined;
  }
  return body.error?.code ?? undefined;
}

/** After every row: a normal request is answered. */
async function healthyAfterwards(route: RouteName): Promise<void> {
  const ok = await send(route, 'ok');
  expect(ok.status, ok.text).toBe(200);
  expect(ok.text).toContain('ok');
}

type Expected = { status: number; code?: string } | 'broken-after-200' | 'relayed-200';

interface Row {
  mode: FaultMode;
  what: string;
  timeoutMs?: number;
  /** Upper bound of the answer's time. */
  withinMs: number;
  expect: Partial<Record<RouteName, Expected>> & { default: Expected };
  /** Whether the request's upstream connection must be closed afterwards (reused keep-alive sockets may stay). */
  closes: boolean;
}

const ROWS: Row[] = [
  {
    mode: 'reset-before-headers',
    what: 'reset before headers: 502 upstream_unreachable',
    withinMs: 3_000,
    expect: { default: { status: 502, code: 'upstream_unreachable' } },
    closes: true,
  },
  {
    mode: 'reset-mid-body',
    what: 'reset mid-body: 502 upstream_response_ended (proxy: the relayed body breaks)',
    withinMs: 3_000,
    expect: { default: { status: 502, code: 'upstream_response_ended' }, proxy: 'broken-after-200' },
    closes: true,
  },
  { mode: 'status-500', what: '5xx passed through', withinMs: 3_000, expect: { default: { status: 500 } }, closes: false },
  { mode: 'status-429', what: '429 passed through', withinMs: 3_000, expect: { default: { status: 429 } }, closes: false },
  {
    mode: 'no-headers',
    what: 'headers never sent: 408 request_timeout at the timeout',
    timeoutMs: 1_000,
    withinMs: 4_000,
    expect: { default: { status: 408, code: 'request_timeout' } },
    closes: true,
  },
  {
    mode: 'stall-after-headers',
    what: 'stall after headers: 408 request_timeout at the timeout',
    timeoutMs: 1_000,
    withinMs: 4_000,
    expect: { default: { status: 408, code: 'request_timeout' } },
    closes: true,
  },
  {
    mode: 'drip',
    what: '1 byte every 500 ms: 408 at the timeout (proxy: the relayed body breaks at the timeout)',
    timeoutMs: 2_000,
    withinMs: 5_000,
    expect: { default: { status: 408, code: 'request_timeout' }, proxy: 'broken-after-200' },
    closes: true,
  },
  {
    mode: 'invalid-json',
    what: 'invalid JSON: 502 invalid_upstream_response (proxy: relayed as is)',
    withinMs: 3_000,
    expect: { default: { status: 502, code: 'invalid_upstream_response' }, proxy: 'relayed-200' },
    closes: false,
  },
  {
    mode: 'html',
    what: 'HTML with 200: 502 invalid_upstream_response (proxy: relayed as is)',
    withinMs: 3_000,
    expect: { default: { status: 502, code: 'invalid_upstream_response' }, proxy: 'relayed-200' },
    closes: false,
  },
  { mode: 'gzip', what: 'gzip body: decoded, 200', withinMs: 3_000, expect: { default: 'relayed-200' }, closes: false },
  {
    mode: 'huge-body',
    what: '100 MB body: 502 upstream_response_too_large, the rest never read (proxy: relayed, not buffered)',
    withinMs: 25_000,
    expect: { default: { status: 502, code: 'upstream_response_too_large' }, proxy: 'relayed-200' },
    closes: true,
  },
];

describe('fault matrix, non-streamed', () => {
  it('refused connection: 502 upstream_unreachable on every route, with the provider and retry count', async () => {
    for (const route of Object.keys(ROUTES) as RouteName[]) {
      const out = await send(route, 'ok', { host: fake.refusedUrl });
      expect(out.status, `${route}: ${out.text}`).toBe(502);
      if (route !== 'messages') expect(errorCode(route, out)).toBe('upstream_unreachable');
      expect(out.headers.get('x-gateway-provider')).toBe(ROUTES[route].provider);
      expect(out.headers.get('x-gateway-retry-attempt-count')).toBe('0');
      expect(out.ms).toBeLessThan(3_000);
      await healthyAfterwards(route);
    }
  });

  for (const row of ROWS) {
    for (const route of Object.keys(ROUTES) as RouteName[]) {
      const expected = row.expect[route] ?? row.expect.default;
      it(`${route}: ${row.what}`, async () => {
        const headers: Record<string, string> = row.timeoutMs ? { 'x-gateway-request-timeout': String(row.timeoutMs) } : {};
        const out = await send(route, row.mode, { headers });
        const request = fake.requests.find((r) => r.mode === row.mode)!;
        expect(request, 'the upstream saw the request').toBeDefined();
        if (expected === 'broken-after-200') {
          expect(out.status).toBe(200);
          expect(out.broken, 'the caller must not take a cut body for a complete one').toBe(true);
        } else if (expected === 'relayed-200') {
          expect(out.status, out.text).toBe(200);
          expect(out.broken).toBe(false);
          expect(out.headers.get('content-encoding')).toBeNull();
          if (row.mode === 'huge-body') expect(out.bytes).toBe(100_000_000);
          else if (row.mode === 'invalid-json' || row.mode === 'html') expect(out.text).toBe(await bodyOf(row.mode));
          else expect(out.text).toContain('ok');
        } else {
          expect(out.status, out.text).toBe(expected.status);
          if (expected.code) {
            const code = errorCode(route, out);
            if (route !== 'messages') expect(code).toBe(expected.code);
          }
          if (row.mode === 'status-429') expect(out.headers.get('retry-after')).toBe('1');
          // Body-phase failures carry the same headers as the others.
          expect(out.headers.get('x-gateway-provider')).toBe(ROUTES[route].provider);
          expect(out.headers.get('x-gateway-retry-attempt-count')).toBe('0');
        }
        expect(out.ms).toBeLessThan(row.withinMs);
        // A body relayed whole leaves its connection to the keep-alive pool.
        if (row.closes && expected !== 'relayed-200') await fake.connectionClosedWithin(request, 3_000);
        await healthyAfterwards(route);
      });
    }
  }
});

describe('fault matrix, non-streamed: Messages passed through to an Anthropic upstream', () => {
  // Every target is Anthropic: the body is relayed as the provider sends it (not translated).
  const native = (mode: FaultMode, headers: Record<string, string> = {}) =>
    fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-api-key': gw.adminKey,
        'x-gateway-provider': 'anthropic',
        'x-gateway-custom-host': `${fake.url}/v1`,
        'x-api-key': 'sk-ant-fault',
        'anthropic-version': '2023-06-01',
        'x-fault-mode': mode,
        'x-gateway-forward-headers': 'x-fault-mode',
        ...headers,
      },
      body: JSON.stringify(ROUTES.messages.body),
    });

  it('stall after headers: 408 in Anthropic’s shape at the timeout, with the provider header', async () => {
    const started = Date.now();
    const res = await native('stall-after-headers', { 'x-gateway-request-timeout': '1000' });
    expect(res.status).toBe(408);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: expect.any(String) } });
    expect(res.headers.get('x-gateway-provider')).toBe('anthropic');
    expect(Date.now() - started).toBeLessThan(4_000);
    await fake.connectionClosedWithin(fake.requests[0]!, 3_000);
  });

  it('reset mid-body: the relayed body breaks, never a clean end', async () => {
    const res = await native('reset-mid-body');
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });
});

/** What the fake sends in a mode, read straight from it (for the relayed rows). */
async function bodyOf(mode: FaultMode): Promise<string> {
  const res = await fetch(`${fake.url}/v1/x`, { method: 'POST', headers: { 'x-fault-mode': mode }, body: '{}' });
  return res.text();
}
