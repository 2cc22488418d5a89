import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startFaultyUpstream, type FaultMode, type FaultyUpstream } from '../fakes/faulty-upstream';
import { call, errorOf, startTestGateway } from '../support/gateway';

/**
 * Without `x-gateway-request-timeout` or a config's `request_timeout`, a provider call is
 * still bounded: DEFAULT_UPSTREAM_TIMEOUT_MS over the whole exchange (headers and body), and
 * UPSTREAM_IDLE_TIMEOUT_MS between body bytes. Both are shortened here so the rows run fast.
 */
let gw: LocalGateway;
let fake: FaultyUpstream;

beforeAll(async () => {
  fake = await startFaultyUpstream({ dripIntervalMs: 300 });
  gw = await startTestGateway({ env: { DEFAULT_UPSTREAM_TIMEOUT_MS: '2000', UPSTREAM_IDLE_TIMEOUT_MS: '1000' } });
  // The chat route's code loads with its first request: load it now, so the rows time the bounds alone.
  const warm = await chatWith('ok');
  expect(warm.res.status, warm.res.text).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});
beforeEach(() => fake.reset());

async function chatWith(mode: FaultMode) {
  const started = Date.now();
  const res = await call(gw, 'POST', '/v1/chat/completions', {
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
    headers: {
      'x-gateway-provider': 'openai',
      'x-gateway-custom-host': `${fake.url}/v1`,
      authorization: 'Bearer sk-fault',
      'x-fault-mode': mode,
      'x-gateway-forward-headers': 'x-fault-mode',
    },
  });
  return { res, ms: Date.now() - started };
}

describe('default bounds of a provider call', () => {
  it('headers never sent: 408 at DEFAULT_UPSTREAM_TIMEOUT_MS', async () => {
    const { res, ms } = await chatWith('no-headers');
    expect(res.status, res.text).toBe(408);
    expect(errorOf(res).code).toBe('request_timeout');
    expect(ms).toBeGreaterThanOrEqual(1_900);
    expect(ms).toBeLessThan(6_000);
    await fake.connectionClosedWithin(fake.requests[0]!, 3_000);
  });

  it('a body dripping faster than the idle bound: 408 at DEFAULT_UPSTREAM_TIMEOUT_MS, which covers the body too', async () => {
    const { res, ms } = await chatWith('drip');
    expect(res.status, res.text).toBe(408);
    expect(errorOf(res).code).toBe('request_timeout');
    expect(ms).toBeLessThan(6_000);
    await fake.connectionClosedWithin(fake.requests[0]!, 3_000);
  });

  it('silence after the headers: 504 upstream_idle_timeout at UPSTREAM_IDLE_TIMEOUT_MS, before the overall bound', async () => {
    const { res, ms } = await chatWith('stall-after-headers');
    expect(res.status, res.text).toBe(504);
    expect(errorOf(res)).toMatchObject({ type: 'timeout_error', code: 'upstream_idle_timeout' });
    expect(res.headers.get('x-gateway-provider')).toBe('openai');
    expect(ms).toBeLessThan(1_900 + 3_000);
    await fake.connectionClosedWithin(fake.requests[0]!, 3_000);
  });
});
