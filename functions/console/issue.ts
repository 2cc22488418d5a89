import { randomBytes } from 'node:crypto';
import { type JWTPayload, SignJWT } from 'jose';
import { SESSION_AUDIENCE, type SessionClaims, type SessionPrincipal } from '../shared/auth/console-session';
import { SESSION_COOKIE } from '../shared/auth/session-cookie';
import { SESSION_ALG } from '../shared/auth/session-keys';
import { config } from '../shared/config';
import { currentSigningKey } from './signing-keys';

/** Issuing console sessions and sign-in tokens (the admin group only): ../shared/auth/console-session.ts verifies them. */
export interface IssuedSession {
  /** The whole `Set-Cookie` value. */
  cookie: string;
  claims: SessionClaims;
}

export async function issueSession(principal: SessionPrincipal): Promise<IssuedSession> {
  const ttl = config().consoleSessionTtlSeconds;
  const claims: SessionClaims = {
    sub: principal.subject,
    knd: principal.kind,
    ws: principal.workspaceId,
    org: principal.organisationId,
    role: principal.role,
    scp: principal.scopes,
    csrf: randomBytes(24).toString('base64url'),
    ...(principal.email ? { email: principal.email } : {}),
    exp: Math.floor(Date.now() / 1000) + ttl,
  };
  const token = await signConsoleToken(claims, SESSION_AUDIENCE, claims.exp);
  return { cookie: sessionCookie(token, ttl), claims };
}

const sessionCookie = (value: string, maxAge: number) => `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${maxAge}; HttpOnly; Secure; SameSite=Strict`;

/** The `Set-Cookie` value that signs out (the browser drops the cookie). */
export const clearedSessionCookie = () => sessionCookie('', 0);

/** A token of the console (a session, a sign-in in progress) for `audience`, signed like a session; `expiresAt` in unix seconds. */
export async function signConsoleToken(payload: JWTPayload, audience: string, expiresAt: number): Promise<string> {
  const signing = await currentSigningKey();
  return new SignJWT(payload)
    .setProtectedHeader({ alg: SESSION_ALG, kid: signing.kid })
    .setAudience(audience)
    .setIssuedAt()
    .setExpirationTime(expiresAt)
    .sign(signing.key);
}
