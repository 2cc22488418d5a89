import { afterAll, beforeAll, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { call, errorOf, startTestGateway } from '../support/gateway';

// A console session ends when its cookie's token expires (CONSOLE_SESSION_TTL_SECONDS, here 1 s):
// the API then answers 401 as it does to a missing key, and the console returns to sign-in.
let gw: LocalGateway;

beforeAll(async () => {
  gw = await startTestGateway({ env: { CONSOLE_SESSION_TTL_SECONDS: '1' } });
}, 60_000);

afterAll(async () => {
  await gw?.stop();
});

it('refuses an expired session cookie with a 401', async () => {
  const signIn = await call(gw, 'POST', '/console/session', { key: null, body: { api_key: gw.adminKey } });
  expect(signIn.status, signIn.text).toBe(200);
  expect(signIn.headers.get('set-cookie')).toMatch(/Max-Age=1;/);
  const cookie = /^(gw_console=[^;]+)/.exec(signIn.headers.get('set-cookie') ?? '')![1]!;
  // Past `exp` (whole seconds: at most 2 s after sign-in), with margin for a loaded machine.
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  for (const path of ['/v1/logs', '/console/session']) {
    const res = await call(gw, 'GET', path, { key: null, headers: { cookie } });
    expect(res.status, path).toBe(401);
    expect(errorOf(res)).toMatchObject({ type: 'authentication_error', code: 'invalid_session' });
  }
});
