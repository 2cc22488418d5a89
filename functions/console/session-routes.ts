import { authenticate, sessionContext } from '../shared/auth/authenticate';
import { type SessionClaims, sessionTokenFrom, verifySessionToken } from '../shared/auth/console-session';
import { clearedSessionCookie, issueSession } from './issue';
import { unauthorized } from '../shared/errors';
import { ok } from '../shared/http/response';
import type { AuthContext, GatewayRequest, HttpResponse, Route } from '../shared/http/types';
import { log } from '../shared/telemetry/logger';
import { parseInput, z } from '../shared/validation';

/**
 * The console's sign-in with a gateway key (docs/console-sso.md): `POST /console/session`
 * trades a key for the `gw_console` cookie; `GET` reads the session back (the console's
 * "am I signed in"), `DELETE` signs out. These routes are public: they check the key or
 * the cookie themselves.
 */
const signInSchema = z.strictObject({ api_key: z.string().check(z.minLength(1), z.maxLength(512)) });

/** What the console learns of its session (never the cookie itself, which it cannot read). */
export function sessionBody(claims: SessionClaims, auth: AuthContext) {
  return {
    object: 'console.session',
    kind: claims.knd,
    subject: auth.subject ?? claims.sub,
    ...(claims.email ? { email: claims.email } : {}),
    role: auth.role,
    workspace_id: auth.workspaceId,
    scopes: auth.scopes,
    csrf_token: claims.csrf,
    expires_at: claims.exp,
  };
}

const NO_STORE = { 'cache-control': 'no-store' };

async function signIn(req: GatewayRequest): Promise<HttpResponse> {
  const { api_key: apiKey } = parseInput(signInSchema, req.json());
  let auth: AuthContext;
  try {
    auth = await authenticate({ 'x-gateway-api-key': apiKey }, 'GET');
  } catch (err) {
    log.info('console sign-in refused', { reason: (err as { code?: string }).code ?? 'error' }, req.context);
    throw err;
  }
  const { cookie, claims } = await issueSession({
    kind: 'key',
    subject: auth.keyId,
    role: auth.role,
    workspaceId: auth.workspaceId,
    organisationId: auth.organisationId,
    scopes: [...auth.scopes],
  });
  log.info('console session started', { kind: 'key', key_id: auth.keyId, role: auth.role }, req.context);
  return ok(sessionBody(claims, { ...auth, subject: auth.keyId }), { ...NO_STORE, 'set-cookie': cookie });
}

async function current(req: GatewayRequest): Promise<HttpResponse> {
  const token = sessionTokenFrom(req.headers);
  if (!token) throw unauthorized('No console session: sign in first.', 'missing_session');
  const claims = await verifySessionToken(token);
  // A 401 when the key behind the session was revoked, expired or removed.
  const auth = await sessionContext(claims);
  return ok(sessionBody(claims, auth), NO_STORE);
}

/** Sign-out: always clears the cookie (a stale or forged one too). */
async function signOut(): Promise<HttpResponse> {
  return ok({ object: 'console.session', deleted: true }, { ...NO_STORE, 'set-cookie': clearedSessionCookie() });
}

export const sessionRoutes: Route[] = [
  { method: 'POST', path: '/console/session', access: 'public', handler: signIn },
  { method: 'GET', path: '/console/session', access: 'public', handler: current },
  { method: 'DELETE', path: '/console/session', access: 'public', handler: signOut },
];
