import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, errorOf, startTestGateway } from '../support/gateway';

let gw: LocalGateway;
let failing: FakeServer;
let healthy: FakeServer;

beforeAll(async () => {
  [failing, healthy] = await Promise.all([startOpenAIFake(), startOpenAIFake()]);
  gw = await startTestGateway();
  for (const [slug, fake] of [
    ['bad', failing],
    ['good', healthy],
  ] as const) {
    const res = await call(gw, 'POST', '/v1/providers', { body: { slug, provider: 'openai', api_key: `sk-${slug}`, custom_host: `${fake.url}/v1` } });
    expect(res.status).toBe(200);
  }
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all([failing?.close(), healthy?.close()]);
});
beforeEach(() => {
  failing.reset();
  healthy.reset();
  failing.setBehaviour({ status: 503 });
});

const client = (config: unknown, headers: Record<string, string> = {}, key = gw.adminKey) =>
  new OpenAI({
    baseURL: gw.baseUrl,
    apiKey: 'unused',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': key, 'x-gateway-config': JSON.stringify(config), ...headers },
  });

const fallbackConfig = {
  strategy: { mode: 'fallback' },
  retry: { attempts: 2 },
  targets: [{ provider: '@bad' }, { provider: '@good' }],
};

const ask = (text: string) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: text }] });

describe('fallback with retries, through the OpenAI SDK', () => {
  it('non-streamed: retries the failing target, falls back, and says so in headers', async () => {
    const { data, response } = await client(fallbackConfig).chat.completions.create(ask('fallback please')).withResponse();
    expect(data.choices[0]!.message.content).toBe('echo: fallback please');
    expect(failing.count('/chat/completions')).toBe(3);
    expect(healthy.count('/chat/completions')).toBe(1);
    expect(response.headers.get('x-gateway-last-used-option-index')).toBe('config.targets[1]');
    expect(response.headers.get('x-gateway-retry-attempt-count')).toBe('0');
    expect(response.headers.get('x-gateway-provider')).toBe('openai');
  });

  it('streamed: the same, and chunks arrive from the healthy target', async () => {
    const { data: stream, response } = await client(fallbackConfig)
      .chat.completions.create({ ...ask('stream fallback'), stream: true })
      .withResponse();
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: stream fallback');
    expect(response.headers.get('x-gateway-last-used-option-index')).toBe('config.targets[1]');
    expect(failing.count('/chat/completions')).toBe(3);
  });

  it('reports the retry count of the target that answered', async () => {
    failing.setBehaviour({ status: 503, times: 2 });
    const { response } = await client({ provider: '@bad', retry: { attempts: 3 } })
      .chat.completions.create(ask('x'))
      .withResponse();
    expect(response.headers.get('x-gateway-retry-attempt-count')).toBe('2');
    expect(response.headers.get('x-gateway-last-used-option-index')).toBe('config');
  });

  it('never retries once a stream has started: the failure becomes an SSE error event', async () => {
    failing.setBehaviour({ status: undefined, cutAfter: 2 });
    const stream = await client({ provider: '@bad', retry: { attempts: 3, on_status_codes: [500, 502, 503] } }).chat.completions.create({
      ...ask('cut me after two chunks please'),
      stream: true,
    });
    const failure = await (async () => {
      for await (const _ of stream) void _;
    })().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect(failing.count('/chat/completions')).toBe(1);
  });

  it('a per-attempt timeout aborts the slow target and falls back; every attempt is logged', async () => {
    failing.setBehaviour({ status: undefined, latencyMs: 3000 });
    const traceId = `trace-timeout-${Date.now()}`;
    const config = { strategy: { mode: 'fallback' }, targets: [{ provider: '@bad', request_timeout: 100 }, { provider: '@good' }] };
    const { response } = await client(config, { 'x-gateway-trace-id': traceId }).chat.completions.create(ask('slow')).withResponse();
    expect(response.headers.get('x-gateway-last-used-option-index')).toBe('config.targets[1]');
    let record: any;
    for (let i = 0; i < 50 && !record; i++) {
      record = (await call(gw, 'GET', `/v1/logs?trace_id=${traceId}`)).body.data[0];
      if (!record) await new Promise((r) => setTimeout(r, 50));
    }
    expect(record.attempts.map((a: { path: string; status: number }) => [a.path, a.status])).toEqual([
      ['config.targets[0]', 408],
      ['config.targets[1]', 200],
    ]);
  });

  it('an invalid config is a 400 naming the JSON path', async () => {
    const res = await call(gw, 'POST', '/v1/chat/completions', {
      headers: { 'x-gateway-config': JSON.stringify({ strategy: { mode: 'fallback' }, targets: [{ provider: '@good', retry: { attempts: 7 } }] }) },
      body: ask('x'),
    });
    expect(res.status).toBe(400);
    expect(errorOf(res).message).toContain('x-gateway-config.targets[0].retry.attempts');
  });

  it('a saved config works by id or slug', async () => {
    const saved = await call(gw, 'POST', '/v1/configs', { body: { name: 'Resilient', config: fallbackConfig } });
    expect(saved.status).toBe(200);
    for (const ref of [saved.body.id, saved.body.slug]) {
      const res = await call(gw, 'POST', '/v1/chat/completions', { headers: { 'x-gateway-config': ref }, body: ask('saved') });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-gateway-last-used-option-index')).toBe('config.targets[1]');
    }
  });
});

/**
 * The copy is stored after the first response has been sent: ask again until it is there.
 * `misses`: how many of these asks were answered by the provider (each one a MISS).
 */
async function untilHit<T extends { response: Response }>(send: () => Promise<T>): Promise<T & { misses: number }> {
  let last = await send();
  let misses = 0;
  for (let i = 0; i < 200 && last.response.headers.get('x-gateway-cache-status') !== 'HIT'; i++) {
    expect(last.response.headers.get('x-gateway-cache-status')).toBe('MISS');
    misses++;
    await new Promise((r) => setTimeout(r, 25));
    last = await send();
  }
  expect(last.response.headers.get('x-gateway-cache-status')).toBe('HIT');
  return { ...last, misses };
}

describe('simple cache', () => {
  const cached = { provider: '@good', cache: { mode: 'simple', max_age: 600 } };

  it('MISS -> HIT -> REFRESH, non-streamed', async () => {
    const c = client(cached);
    const body = ask(`cache me ${Date.now()}`);
    const first = await c.chat.completions.create(body).withResponse();
    const second = await untilHit(() => c.chat.completions.create(body).withResponse());
    expect(first.response.headers.get('x-gateway-cache-status')).toBe('MISS');
    expect(second.data.choices).toEqual(first.data.choices);
    expect(second.data.usage).toEqual(first.data.usage);
    // The provider answered the first request and any asked before its copy was stored, never a HIT.
    const upstreamCalls = healthy.count('/chat/completions');
    expect(upstreamCalls).toBe(1 + second.misses);
    const refreshed = await client(cached, { 'x-gateway-cache-force-refresh': 'true' }).chat.completions.create(body).withResponse();
    expect(refreshed.response.headers.get('x-gateway-cache-status')).toBe('REFRESH');
    expect(healthy.count('/chat/completions')).toBe(upstreamCalls + 1);
  });

  it('a streamed request is served from cache as a proper SSE stream', async () => {
    const c = client(cached);
    const body = { ...ask(`stream cache ${Date.now()}`), stream: true as const };
    const read = async () => {
      const { data, response } = await c.chat.completions.create(body).withResponse();
      let text = '';
      for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? '';
      return { text, status: response.headers.get('x-gateway-cache-status') };
    };
    const first = await read();
    let second = await read();
    // The copy is stored after the first response has been sent; wait for it.
    for (let i = 0; i < 200 && second.status !== 'HIT'; i++) second = await read();
    expect(first.status).toBe('MISS');
    expect(second).toEqual({ text: first.text, status: 'HIT' });
    expect(first.text).toContain('echo: stream cache');
  });

  it('namespaces and workspaces partition the cache', async () => {
    const body = ask(`partition ${Date.now()}`);
    await client(cached, { 'x-gateway-cache-namespace': 'one' }).chat.completions.create(body);
    const again = await untilHit(() => client(cached, { 'x-gateway-cache-namespace': 'one' }).chat.completions.create(body).withResponse());
    const other = await client(cached, { 'x-gateway-cache-namespace': 'two' }).chat.completions.create(body).withResponse();
    expect(again.response.headers.get('x-gateway-cache-status')).toBe('HIT');
    expect(other.response.headers.get('x-gateway-cache-status')).toBe('MISS');

    const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: `cache-ws-${Date.now()}` } });
    const key = (await call(gw, 'POST', '/v1/api-keys', { body: { name: 'k', workspace_id: ws.body.id, scopes: ['admin', 'gateway'] } })).body.secret;
    await call(gw, 'POST', '/v1/providers', { key, body: { slug: 'good', provider: 'openai', api_key: 'sk-good', custom_host: `${healthy.url}/v1` } });
    const elsewhere = await client(cached, { 'x-gateway-cache-namespace': 'one' }, key).chat.completions.create(body).withResponse();
    expect(elsewhere.response.headers.get('x-gateway-cache-status')).toBe('MISS');
  });

  it('says DISABLED without a cache config, and only caches successes', async () => {
    const plain = await client({ provider: '@good' }).chat.completions.create(ask('no cache')).withResponse();
    expect(plain.response.headers.get('x-gateway-cache-status')).toBe('DISABLED');
    const body = ask(`fail then ok ${Date.now()}`);
    const failingCached = { provider: '@bad', cache: { mode: 'simple' } };
    await client(failingCached)
      .chat.completions.create(body)
      .catch(() => undefined);
    failing.setBehaviour({ status: undefined });
    const after = await client(failingCached).chat.completions.create(body).withResponse();
    expect(after.response.headers.get('x-gateway-cache-status')).toBe('MISS');
  });

  it('clamps cache-control max-age to the 60 s floor and stores a TTL accordingly', async () => {
    const marker = `ttl-${Date.now()}`;
    await client(cached, { 'cache-control': 'max-age=1' }).chat.completions.create(ask(marker));
    const { ddb } = await import('../../functions/shared/db/client');
    let item: { ttl: number } | undefined;
    for (let i = 0; i < 40 && !item; i++) {
      const out = await ddb.scan({ TableName: process.env.TABLE_CACHE! });
      item = (out.Items ?? []).find((it) =>
        Buffer.from(it.body as Uint8Array)
          .toString()
          .includes(marker),
      ) as { ttl: number } | undefined;
      if (!item) await new Promise((r) => setTimeout(r, 50));
    }
    const ttlSeconds = item!.ttl - Math.floor(Date.now() / 1000);
    expect(ttlSeconds).toBeGreaterThan(50);
    expect(ttlSeconds).toBeLessThanOrEqual(60);
  });

  it('rejects a config max_age outside 60 s .. 90 days', async () => {
    for (const max_age of [59, 90 * 24 * 3600 + 1]) {
      const res = await call(gw, 'POST', '/v1/chat/completions', {
        headers: { 'x-gateway-config': JSON.stringify({ provider: '@good', cache: { mode: 'simple', max_age } }) },
        body: ask('x'),
      });
      expect(res.status).toBe(400);
      expect(errorOf(res).message).toContain('cache.max_age');
    }
  });
});
