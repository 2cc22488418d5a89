import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, errorOf, startTestGateway } from '../support/gateway';

/**
 * Console sessions (docs/console-sso.md) over HTTP: a key traded for the `gw_console`
 * cookie, the cookie accepted on the documented API in the key's place (its role and
 * workspace), CSRF on writes, sign-out, and a session that dies with its key.
 */
let gw: LocalGateway;
let openai: FakeServer;

interface Session {
  cookie: string;
  csrf: string;
  body: Record<string, unknown>;
  setCookie: string;
}

async function signIn(apiKey: string): Promise<Session> {
  const res = await call(gw, 'POST', '/console/session', { key: null, body: { api_key: apiKey } });
  expect(res.status, res.text).toBe(200);
  const setCookie = res.headers.get('set-cookie') ?? '';
  const cookie = /^(gw_console=[^;]+)/.exec(setCookie)?.[1];
  expect(cookie, setCookie).toBeTruthy();
  return { cookie: cookie!, csrf: res.body.csrf_token, body: res.body, setCookie };
}

async function createKey(body: Record<string, unknown>): Promise<{ id: string; secret: string }> {
  const res = await call(gw, 'POST', '/v1/api-keys', { body });
  expect(res.status, res.text).toBe(200);
  return { id: res.body.id, secret: res.body.secret };
}

/** A call with the session cookie and no key header; `csrf` adds the CSRF header. */
const withSession = (s: Session, method: string, path: string, opts: { body?: unknown; csrf?: string } = {}) =>
  call(gw, method, path, {
    key: null,
    body: opts.body,
    headers: { cookie: `theme=dark; ${s.cookie}`, ...(opts.csrf !== undefined ? { 'x-csrf-token': opts.csrf } : {}) },
  });

beforeAll(async () => {
  openai = await startOpenAIFake();
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0' } });
  const provider = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'console-openai', provider: 'openai', api_key: 'sk-console-0123456789', custom_host: `${openai.url}/v1` },
  });
  expect(provider.status, provider.text).toBe(200);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await openai?.close();
});

describe('signing in with a key', () => {
  it('sets a short-lived HttpOnly, Secure, SameSite=Strict cookie and answers the session', async () => {
    const before = Math.floor(Date.now() / 1000);
    const s = await signIn(gw.adminKey);
    expect(s.setCookie).toMatch(/;\s*HttpOnly/i);
    expect(s.setCookie).toMatch(/;\s*Secure/i);
    expect(s.setCookie).toMatch(/;\s*SameSite=Strict/i);
    expect(s.setCookie).toMatch(/;\s*Path=\/(;|$)/);
    expect(s.setCookie).toMatch(/;\s*Max-Age=28800/);
    expect(s.body).toMatchObject({
      kind: 'key',
      role: 'org-admin',
      workspace_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      subject: expect.stringMatching(/^key_/),
    });
    expect(s.csrf).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(s.body.expires_at).toBeGreaterThanOrEqual(before + 8 * 3600);
    expect(s.body.expires_at).toBeLessThanOrEqual(before + 8 * 3600 + 60);
    // The secret never comes back, and the cookie is not the key.
    expect(JSON.stringify(s.body)).not.toContain(gw.adminKey);
    expect(s.cookie).not.toContain(gw.adminKey);

    const again = await withSession(s, 'GET', '/console/session');
    expect(again.status, again.text).toBe(200);
    expect(again.body).toEqual(s.body);
  });

  it('refuses a bad key with a 401 and a missing one with a 400 naming the field', async () => {
    const bad = await call(gw, 'POST', '/console/session', { key: null, body: { api_key: 'gwk_not-a-key' } });
    expect(bad.status).toBe(401);
    expect(errorOf(bad)).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
    expect(bad.headers.get('set-cookie')).toBeNull();

    const missing = await call(gw, 'POST', '/console/session', { key: null, body: {} });
    expect(missing.status).toBe(400);
    expect(errorOf(missing).param).toBe('api_key');

    const notJson = await call(gw, 'POST', '/console/session', { key: null, body: 'api_key=x', headers: { 'content-type': 'text/plain' } });
    expect(notJson.status).toBe(400);
  });

  it('answers 401 to GET /console/session without a cookie or with a forged one', async () => {
    const none = await call(gw, 'GET', '/console/session', { key: null });
    expect(none.status).toBe(401);
    expect(errorOf(none).code).toBe('missing_session');

    const s = await signIn(gw.adminKey);
    const [header, payload, signature] = s.cookie.slice('gw_console='.length).split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8'));
    const forged = Buffer.from(JSON.stringify({ ...claims, role: 'org-admin', sub: 'key_someone_else' })).toString('base64url');
    for (const cookie of [`gw_console=${header}.${forged}.${signature}`, 'gw_console=garbage', `gw_console=${header}.${payload}.${'A'.repeat(86)}`]) {
      const res = await call(gw, 'GET', '/console/session', { key: null, headers: { cookie } });
      expect(res.status, cookie).toBe(401);
      expect(errorOf(res).code).toBe('invalid_session');
      const api = await call(gw, 'GET', '/v1/api-keys', { key: null, headers: { cookie } });
      expect(api.status, cookie).toBe(401);
    }
  });
});

describe('the cookie on the documented API', () => {
  it('reads with the cookie alone, and writes only with the CSRF token', async () => {
    const s = await signIn(gw.adminKey);
    const list = await withSession(s, 'GET', '/v1/api-keys');
    expect(list.status, list.text).toBe(200);
    expect(list.body.object).toBe('list');

    const body = { name: 'made from the console', role: 'viewer' };
    const noToken = await withSession(s, 'POST', '/v1/api-keys', { body });
    expect(noToken.status).toBe(403);
    expect(errorOf(noToken)).toMatchObject({ type: 'permission_error', code: 'csrf_failed', param: 'x-csrf-token' });

    const wrongToken = await withSession(s, 'POST', '/v1/api-keys', { body, csrf: `${s.csrf.slice(0, -1)}x` });
    expect(wrongToken.status).toBe(403);
    expect(errorOf(wrongToken).code).toBe('csrf_failed');

    // Another session's token is not this one's.
    const other = await signIn(gw.adminKey);
    const crossed = await withSession(s, 'POST', '/v1/api-keys', { body, csrf: other.csrf });
    expect(crossed.status).toBe(403);

    const made = await withSession(s, 'POST', '/v1/api-keys', { body, csrf: s.csrf });
    expect(made.status, made.text).toBe(200);
    expect(made.body).toMatchObject({ name: 'made from the console', role: 'viewer' });
    const revoked = await withSession(s, 'DELETE', `/v1/api-keys/${made.body.id}`, { csrf: s.csrf });
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.body.status).toBe('revoked');
  });

  it('applies the role and workspace of the key behind the session', async () => {
    const viewer = await signIn((await createKey({ name: 'viewer', role: 'viewer' })).secret);
    expect(viewer.body.role).toBe('viewer');
    expect((await withSession(viewer, 'GET', '/v1/api-keys')).status).toBe(200);
    const write = await withSession(viewer, 'POST', '/v1/configs', { body: { name: 'x', config: {} }, csrf: viewer.csrf });
    expect(write.status).toBe(403);
    expect(errorOf(write).code).toBe('insufficient_role');
    expect(errorOf(write).message).toContain('`viewer`');

    const member = await signIn((await createKey({ name: 'member', role: 'member' })).secret);
    const keys = await withSession(member, 'GET', '/v1/api-keys');
    expect(keys.status).toBe(403);
    expect(errorOf(keys).message).toContain('`member`');
    expect((await withSession(member, 'GET', '/v1/logs')).status).toBe(200);
  });

  it('a key header wins over the cookie', async () => {
    const viewer = await signIn((await createKey({ name: 'viewer 2', role: 'viewer' })).secret);
    const res = await call(gw, 'GET', '/v1/workspaces', { headers: { cookie: viewer.cookie } });
    expect(res.status, res.text).toBe(200);
  });

  it('dies with its key: a revoked key signs no request in, nor reads its session', async () => {
    const key = await createKey({ name: 'short-lived', role: 'workspace-admin' });
    const s = await signIn(key.secret);
    expect((await withSession(s, 'GET', '/v1/api-keys')).status).toBe(200);
    const revoke = await call(gw, 'DELETE', `/v1/api-keys/${key.id}`);
    expect(revoke.status, revoke.text).toBe(200);

    const after = await withSession(s, 'GET', '/v1/api-keys');
    expect(after.status).toBe(401);
    expect(errorOf(after).code).toBe('revoked_api_key');
    expect((await withSession(s, 'GET', '/console/session')).status).toBe(401);
    const again = await call(gw, 'POST', '/console/session', { key: null, body: { api_key: key.secret } });
    expect(again.status).toBe(401);
  });

  it('carries model traffic (the playground) without forwarding the cookie or the CSRF token upstream', async () => {
    const s = await signIn(gw.adminKey);
    const res = await call(gw, 'POST', '/v1/chat/completions', {
      key: null,
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello from the console' }] },
      headers: {
        cookie: s.cookie,
        'x-csrf-token': s.csrf,
        'x-gateway-provider': '@console-openai',
        'x-gateway-forward-headers': 'cookie,x-csrf-token',
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.object).toBe('chat.completion');
    const upstream = openai.last()!;
    expect(upstream.headers.cookie).toBeUndefined();
    expect(upstream.headers['x-csrf-token']).toBeUndefined();
    expect(JSON.stringify(upstream.headers)).not.toContain(s.csrf);
  });

  it('signs out: the cookie is cleared', async () => {
    const s = await signIn(gw.adminKey);
    const out = await withSession(s, 'DELETE', '/console/session');
    expect(out.status, out.text).toBe(200);
    const cleared = out.headers.get('set-cookie') ?? '';
    expect(cleared).toMatch(/^gw_console=;/);
    expect(cleared).toMatch(/Max-Age=0/);
    expect(cleared).toMatch(/HttpOnly/);
  });
});
