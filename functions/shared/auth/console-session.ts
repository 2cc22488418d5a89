import { timingSafeEqual } from 'node:crypto';
import { decodeProtectedHeader, type JWTPayload, jwtVerify } from 'jose';
import { GatewayError, unauthorized } from '../errors';
import type { AuthContext, Role, Scope } from '../http/types';
import { CSRF_HEADER } from './session-cookie';
import { SESSION_ALG, verificationKey } from './session-keys';

/**
 * Console sessions (docs/console-sso.md): a short-lived token signed by the gateway
 * (session-keys.ts), carried in the `gw_console` cookie (HttpOnly, Secure, SameSite=Strict).
 * A session made from a gateway key names the key, and is checked against it on every use:
 * it dies with the key, and follows its role. A single-sign-on session carries the role
 * and workspace its claims mapped to (functions/console/sso). Writes need the session's
 * CSRF token in `x-csrf-token`: the cookie alone never authorises a change.
 */
export { CSRF_HEADER, SESSION_COOKIE, sessionTokenFrom } from './session-cookie';
export const SESSION_AUDIENCE = 'ai-gateway-console';
const KID_PATTERN = /^csk_[a-z0-9]{1,40}$/;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Who a session is: a gateway key (`key`) or a single-sign-on user (`sso`). */
export type SessionKind = 'key' | 'sso';

export interface SessionClaims extends JWTPayload {
  sub: string;
  knd: SessionKind;
  /** Workspace and organisation; a key session re-reads them from its key. */
  ws: string;
  org: string;
  role: Role;
  scp: Scope[];
  csrf: string;
  email?: string;
  exp: number;
}

/** What a session is made from: the principal, as it signed in. */
export interface SessionPrincipal {
  kind: SessionKind;
  /** The key's id, or the issuer's subject. */
  subject: string;
  email?: string;
  role: Role;
  workspaceId: string;
  organisationId: string;
  scopes: Scope[];
}

export const invalidSession = () => unauthorized('The console session has expired or is not valid: sign in again.', 'invalid_session');

/** The claims of a valid, unexpired session token; a 401 otherwise. */
/** The claims of a valid, unexpired session token; a 401 otherwise. */
export async function verifySessionToken(token: string): Promise<SessionClaims> {
  const claims = await verifyConsoleToken<SessionClaims>(token, SESSION_AUDIENCE);
  if (!claims) throw invalidSession();
  return claims;
}

/** The payload of a valid, unexpired console token for `audience`; undefined for a malformed, forged or expired one. */
export async function verifyConsoleToken<T extends JWTPayload>(token: string, audience: string): Promise<T | undefined> {
  let kid: unknown;
  try {
    kid = decodeProtectedHeader(token).kid;
  } catch {
    return undefined;
  }
  if (typeof kid !== 'string' || !KID_PATTERN.test(kid)) return undefined;
  const key = await verificationKey(kid);
  if (!key) return undefined;
  try {
    return (await jwtVerify<T>(token, key, { algorithms: [SESSION_ALG], audience, requiredClaims: ['exp'] })).payload;
  } catch {
    return undefined;
  }
}

export const csrfFailed = () =>
  new GatewayError(
    403,
    'permission_error',
    `A change made with a console session must carry its CSRF token in \`${CSRF_HEADER}\`.`,
    CSRF_HEADER,
    'csrf_failed',
  );

/** Writes (anything but GET, HEAD, OPTIONS) must echo the session's CSRF token; compared in constant time. */
export function checkCsrf(claims: SessionClaims, method: string, headers: Record<string, string>): void {
  if (SAFE_METHODS.has(method)) return;
  const given = Buffer.from(headers[CSRF_HEADER] ?? '', 'utf8');
  const expected = Buffer.from(claims.csrf, 'utf8');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw csrfFailed();
}

/** A single-sign-on session's principal as the kernel reads it (a key session is read from its key: authenticate.ts). */
export function ssoAuthContext(claims: SessionClaims): AuthContext {
  return {
    keyId: `sso:${claims.sub}`,
    workspaceId: claims.ws,
    organisationId: claims.org,
    role: claims.role,
    scopes: claims.scp,
    subject: claims.email ?? claims.sub,
  };
}
