import { OAuth2Server } from 'oauth2-mock-server';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { call, errorOf, startTestGateway } from '../support/gateway';

/**
 * Single sign-on to the console (docs/console-sso.md) against a local OpenID Connect issuer
 * (oauth2-mock-server): the login redirect carries PKCE, state and nonce; the callback sets
 * the session cookie with the role the user's groups map to; a viewer's write is refused
 * naming the role; a mismatched state and a user in no mapped group get no session.
 */
let gw: LocalGateway;
let issuer: OAuth2Server;
let teamWorkspace: string;
/** What the next ID token says: set by each test, applied by the issuer's signing hook. */
let user: { sub: string; email: string; groups?: unknown } = { sub: 'u-1', email: 'ada@example.test', groups: [] };

beforeAll(async () => {
  issuer = new OAuth2Server();
  await issuer.issuer.keys.generate('RS256');
  await issuer.start(0, '127.0.0.1');
  issuer.service.on('beforeTokenSigning', (token) => {
    Object.assign(token.payload, user);
  });
  gw = await startTestGateway({
    env: {
      SSO_ISSUER_URL: issuer.issuer.url!,
      SSO_CLIENT_ID: 'gateway-console',
      SSO_LABEL: 'Test issuer',
      SSO_ROLE_MAP: JSON.stringify({ 'gw-admins': 'org-admin', auditors: 'viewer', 'team-a-admins': 'workspace-admin:team-a' }),
    },
  });
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'Team A', slug: 'team-a' } });
  expect(ws.status, ws.text).toBe(200);
  teamWorkspace = ws.body.id;
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await issuer?.stop();
});

beforeEach(() => {
  user = { sub: 'u-1', email: 'ada@example.test', groups: [] };
});

const cookieOf = (res: Response, name: string) => new RegExp(`^(${name}=[^;]+)`).exec(res.headers.get('set-cookie') ?? '')?.[1];

/** Start a sign-in at the gateway and follow it to the issuer: the callback URL the issuer sends the browser to, and the transaction cookie. */
async function startLogin(): Promise<{ login: Response; authorize: URL; callback: URL; txCookie: string }> {
  const login = await fetch(`${gw.url}/console/sso/login`, { redirect: 'manual' });
  expect(login.status).toBe(302);
  const authorize = new URL(login.headers.get('location')!);
  const txCookie = cookieOf(login, 'gw_console_sso')!;
  expect(txCookie).toBeTruthy();
  const atIssuer = await fetch(authorize, { redirect: 'manual' });
  expect(atIssuer.status).toBe(302);
  return { login, authorize, callback: new URL(atIssuer.headers.get('location')!), txCookie };
}

/** Finish a sign-in at the gateway's callback, as the browser would. */
async function finish(callback: URL, txCookie: string): Promise<Response> {
  return fetch(`${gw.url}${callback.pathname}${callback.search}`, { redirect: 'manual', headers: { cookie: txCookie } });
}

async function signInAs(groups: unknown): Promise<{ cookie: string; csrf: string; session: Record<string, unknown> }> {
  user = { sub: `u-${Math.random().toString(36).slice(2)}`, email: 'ada@example.test', groups };
  const { callback, txCookie } = await startLogin();
  const done = await finish(callback, txCookie);
  expect(done.status, await done.clone().text()).toBe(302);
  expect(new URL(done.headers.get('location')!, `${gw.url}/console/sso/callback`).pathname).toBe('/console/');
  const cookie = cookieOf(done, 'gw_console')!;
  expect(done.headers.get('set-cookie')).toMatch(/HttpOnly.*Secure.*SameSite=Strict|HttpOnly; Secure; SameSite=Strict/);
  const session = await call(gw, 'GET', '/console/session', { key: null, headers: { cookie } });
  expect(session.status, session.text).toBe(200);
  return { cookie, csrf: session.body.csrf_token, session: session.body };
}

describe('console single sign-on', () => {
  it('tells the sign-in page that single sign-on is on', async () => {
    const res = await call(gw, 'GET', '/console/sso/config', { key: null });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: 'console.sso_config', enabled: true, issuer: issuer.issuer.url, label: 'Test issuer' });
  });

  it('sends the browser to the issuer with PKCE (S256), state and nonce', async () => {
    const { authorize, login } = await startLogin();
    expect(authorize.origin + authorize.pathname).toBe(`${issuer.issuer.url}/authorize`);
    const q = authorize.searchParams;
    expect(q.get('response_type')).toBe('code');
    expect(q.get('client_id')).toBe('gateway-console');
    expect(q.get('code_challenge_method')).toBe('S256');
    expect(q.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('state')).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(q.get('nonce')).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(q.get('scope')).toBe('openid email profile');
    expect(q.get('redirect_uri')).toMatch(/\/console\/sso\/callback$/);
    expect(login.headers.get('set-cookie')).toMatch(/HttpOnly; Secure; SameSite=Lax/);
    // The verifier stays with the gateway: not in the URL.
    expect(authorize.href).not.toContain('code_verifier');
  });

  it('signs an org-admin group in as org-admin, who may write with the CSRF token', async () => {
    const { cookie, csrf, session } = await signInAs(['staff', 'gw-admins']);
    expect(session).toMatchObject({ kind: 'sso', role: 'org-admin', email: 'ada@example.test', subject: 'ada@example.test', scopes: ['gateway'] });
    const made = await call(gw, 'POST', '/v1/workspaces', { key: null, body: { name: 'From SSO' }, headers: { cookie, 'x-csrf-token': csrf } });
    expect(made.status, made.text).toBe(200);
    const noCsrf = await call(gw, 'POST', '/v1/workspaces', { key: null, body: { name: 'From SSO 2' }, headers: { cookie } });
    expect(noCsrf.status).toBe(403);
    expect(errorOf(noCsrf).code).toBe('csrf_failed');
  });

  it('maps a viewer group to viewer: reads pass, a write is refused naming the role', async () => {
    const { cookie, csrf, session } = await signInAs(['auditors']);
    expect(session).toMatchObject({ kind: 'sso', role: 'viewer', scopes: [] });
    expect((await call(gw, 'GET', '/v1/api-keys', { key: null, headers: { cookie } })).status).toBe(200);
    const write = await call(gw, 'POST', '/v1/api-keys', { key: null, body: { name: 'nope' }, headers: { cookie, 'x-csrf-token': csrf } });
    expect(write.status).toBe(403);
    expect(errorOf(write).code).toBe('insufficient_role');
    expect(errorOf(write).message).toContain('role is `viewer`');
    expect(errorOf(write).message).toContain('`workspace-admin`');
  });

  it('maps a workspace-admin group to its workspace, and the highest of several groups wins', async () => {
    const { session } = await signInAs(['auditors', 'team-a-admins']);
    expect(session).toMatchObject({ role: 'workspace-admin', workspace_id: teamWorkspace });
  });

  it('gives a user in no mapped group no session', async () => {
    user = { sub: 'u-nobody', email: 'nobody@example.test', groups: ['staff'] };
    const { callback, txCookie } = await startLogin();
    const done = await finish(callback, txCookie);
    expect(done.status).toBe(403);
    expect(done.headers.get('set-cookie')).toBeNull();
    const err = ((await done.json()) as { error: { message: string } }).error;
    expect(err).toMatchObject({ type: 'permission_error', code: 'insufficient_role' });
    expect(err.message).toContain('nobody@example.test');
  });

  it('refuses a callback whose state is not the one this browser started, or without its transaction', async () => {
    user = { sub: 'u-2', email: 'b@example.test', groups: ['gw-admins'] };
    const { callback, txCookie } = await startLogin();
    const forged = new URL(callback);
    forged.searchParams.set('state', 'attacker-state-000000000000');
    const bad = await finish(forged, txCookie);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('sso_state_mismatch');
    expect(bad.headers.get('set-cookie')).toBeNull();

    const other = await startLogin();
    const crossed = await finish(callback, other.txCookie);
    expect(crossed.status).toBe(400);

    const none = await fetch(`${gw.url}${callback.pathname}${callback.search}`, { redirect: 'manual' });
    expect(none.status).toBe(400);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe('sso_no_transaction');
  });

  it('signs out', async () => {
    const { cookie } = await signInAs(['gw-admins']);
    const out = await call(gw, 'DELETE', '/console/session', { key: null, headers: { cookie } });
    expect(out.status).toBe(200);
    expect(out.headers.get('set-cookie')).toMatch(/^gw_console=; .*Max-Age=0/);
  });
});
