import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startFaultyUpstream, type FaultMode, type FaultyUpstream } from '../fakes/faulty-upstream';
import { call, errorOf, startTestGateway } from '../support/gateway';

/**
 * A non-streamed answer whose body fails after 200 headers has reached nobody yet: it is
 * the attempt's failure, so the config's retries and fallback targets apply to it
 * (docs/api.md: "before the first byte reaches you").
 */
let gw: LocalGateway;
let fake: FaultyUpstream;

beforeAll(async () => {
  fake = await startFaultyUpstream();
  gw = await startTestGateway();
  for (const slug of ['faulty-a', 'faulty-b']) {
    const res = await call(gw, 'POST', '/v1/providers', { body: { slug, provider: 'openai', api_key: `sk-${slug}`, custom_host: `${fake.url}/v1` } });
    expect(res.status, res.text).toBe(200);
  }
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});
beforeEach(() => fake.reset());

const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const withConfig = (config: unknown) => ({ 'x-gateway-config': JSON.stringify(config) });

const BODY_FAILURES: FaultMode[] = ['reset-mid-body', 'invalid-json', 'wrong-shape', 'html'];

describe('body failures after 200 headers are the attempt’s failure', () => {
  for (const mode of BODY_FAILURES) {
    it(`${mode}: retried, and the retry's answer is the caller's`, async () => {
      fake.failNext(mode);
      const res = await call(gw, 'POST', '/v1/chat/completions', { body: chat, headers: withConfig({ provider: '@faulty-a', retry: { attempts: 2 } }) });
      expect(res.status, res.text).toBe(200);
      expect(res.body.choices[0].message.content).toBe('ok');
      expect(res.headers.get('x-gateway-retry-attempt-count')).toBe('1');
      expect(fake.requests.map((r) => r.mode)).toEqual([mode, 'ok']);
    });
  }

  it('falls back to the next target when the first one’s body fails', async () => {
    fake.failNext('reset-mid-body');
    const res = await call(gw, 'POST', '/v1/chat/completions', {
      body: chat,
      headers: withConfig({ strategy: { mode: 'fallback' }, targets: [{ provider: '@faulty-a' }, { provider: '@faulty-b' }] }),
    });
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('config.targets[1]');
    expect(fake.requests.map((r) => r.headers.authorization)).toEqual(['Bearer sk-faulty-a', 'Bearer sk-faulty-b']);
  });

  it('an answer of a shape the translation cannot read is not cached: the next request asks the provider again', async () => {
    const cached = {
      body: { ...chat, messages: [{ role: 'user', content: `cache me ${Date.now()}` }] },
      headers: withConfig({ provider: '@faulty-a', cache: { mode: 'simple' } }),
    };
    fake.failNext('wrong-shape');
    const first = await call(gw, 'POST', '/v1/chat/completions', cached);
    expect(first.status, first.text).toBe(502);
    expect(errorOf(first)).toMatchObject({ code: 'invalid_upstream_response' });
    const second = await call(gw, 'POST', '/v1/chat/completions', cached);
    expect(second.status, second.text).toBe(200);
    expect(second.headers.get('x-gateway-cache-status')).toBe('MISS');
    expect(fake.requests.map((r) => r.mode)).toEqual(['wrong-shape', 'ok']);
  });

  it.each([
    ['chat', '/v1/chat/completions', chat],
    ['embeddings', '/v1/embeddings', { model: 'text-embedding-3-small', input: 'hi' }],
  ])('%s: falls back to the next target when the first one answers JSON of a shape the translation cannot read', async (_route, path, body) => {
    fake.failNext('wrong-shape');
    const res = await call(gw, 'POST', path, {
      body,
      headers: withConfig({ strategy: { mode: 'fallback' }, targets: [{ provider: '@faulty-a' }, { provider: '@faulty-b' }] }),
    });
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('config.targets[1]');
    expect(fake.requests.map((r) => r.mode)).toEqual(['wrong-shape', 'ok']);
  });

  it('embeddings too', async () => {
    fake.failNext('reset-mid-body');
    const res = await call(gw, 'POST', '/v1/embeddings', {
      body: { model: 'text-embedding-3-small', input: 'hi' },
      headers: withConfig({ provider: '@faulty-a', retry: { attempts: 1 } }),
    });
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('x-gateway-retry-attempt-count')).toBe('1');
    expect(fake.requests).toHaveLength(2);
  });

  it('with retries exhausted, the caller gets the body failure with its code, provider and retry count', async () => {
    fake.failNext('reset-mid-body', 3);
    const res = await call(gw, 'POST', '/v1/chat/completions', { body: chat, headers: withConfig({ provider: '@faulty-a', retry: { attempts: 2 } }) });
    expect(res.status).toBe(502);
    expect(errorOf(res)).toMatchObject({ type: 'upstream_error', code: 'upstream_response_ended' });
    expect(res.headers.get('x-gateway-provider')).toBe('openai');
    expect(res.headers.get('x-gateway-retry-attempt-count')).toBe('2');
    expect(fake.requests).toHaveLength(3);
  });

  it('without a retry configured, a POST is sent once: a reset of a reused keep-alive socket is not resent', async () => {
    // Warm a pooled connection, then the next request on that same connection is reset.
    const warm = await call(gw, 'POST', '/v1/chat/completions', { body: chat, headers: withConfig({ provider: '@faulty-a' }) });
    expect(warm.status).toBe(200);
    fake.failNext('reset-on-reuse');
    const res = await call(gw, 'POST', '/v1/chat/completions', { body: chat, headers: withConfig({ provider: '@faulty-a' }) });
    expect(fake.requests).toHaveLength(2);
    expect(res.status, res.text).toBe(502);
    expect(res.headers.get('x-gateway-retry-attempt-count')).toBe('0');
  });
});
