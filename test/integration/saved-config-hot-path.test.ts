import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startFaultyUpstream, type FaultyUpstream } from '../fakes/faulty-upstream';
import { call, startTestGateway } from '../support/gateway';

/**
 * A saved config is parsed once per cached copy (functions/gateway/target.ts), not per
 * request: requests must still follow the config as it is now, after an update in this
 * process and across several requests of either version.
 */
let gw: LocalGateway;
let fake: FaultyUpstream;

beforeAll(async () => {
  fake = await startFaultyUpstream();
  gw = await startTestGateway();
  for (const slug of ['parsed-a', 'parsed-b']) {
    const res = await call(gw, 'POST', '/v1/providers', { body: { slug, provider: 'openai', api_key: `sk-${slug}`, custom_host: `${fake.url}/v1` } });
    expect(res.status, res.text).toBe(200);
  }
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };

async function providerKeysOf(requests: number): Promise<string[]> {
  const before = fake.requests.length;
  for (let i = 0; i < requests; i++) {
    const res = await call(gw, 'POST', '/v1/chat/completions', { body: chat, headers: { 'x-gateway-config': 'parsed-once' } });
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('config');
  }
  return fake.requests.slice(before).map((r) => String(r.headers.authorization));
}

describe('saved configs on the hot path', () => {
  it('routes by the saved config as it is now: updates apply to the next request', async () => {
    const created = await call(gw, 'POST', '/v1/configs', { body: { name: 'parsed once', slug: 'parsed-once', config: { provider: '@parsed-a' } } });
    expect(created.status, created.text).toBe(200);
    expect(await providerKeysOf(3)).toEqual(Array(3).fill('Bearer sk-parsed-a'));

    const updated = await call(gw, 'PUT', '/v1/configs/parsed-once', { body: { config: { provider: '@parsed-b', retry: { attempts: 1 } } } });
    expect(updated.status, updated.text).toBe(200);
    expect(await providerKeysOf(3)).toEqual(Array(3).fill('Bearer sk-parsed-b'));
  });

  it("uses a managed provider's rotated key from the next request: a leaf's merged settings are not kept past its provider's copy", async () => {
    expect(await providerKeysOf(2)).toEqual(Array(2).fill('Bearer sk-parsed-b'));
    const rotated = await call(gw, 'PUT', '/v1/providers/parsed-b', { body: { api_key: 'sk-parsed-b-rotated' } });
    expect(rotated.status, rotated.text).toBe(200);
    expect(await providerKeysOf(3)).toEqual(Array(3).fill('Bearer sk-parsed-b-rotated'));
  });
});
