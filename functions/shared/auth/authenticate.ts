import { config } from '../config';
import { unauthorized } from '../errors';
import type { AuthContext, Scope } from '../http/types';
import { findKeyBySecret, getKeyById, type ApiKeyRecord } from '../stores/keys';
import { TtlCache } from '../stores/ttl-cache';
import type { SessionClaims } from './console-session';
import { CSRF_HEADER, sessionTokenFrom } from './session-cookie';
import { hashApiKey } from './keys';
import { roleOf } from './roles';

/**
 * Verifies `x-gateway-api-key`. Verified keys are cached per container for
 * AUTH_CACHE_TTL_MS (default 30 s), so the warm path makes no storage read (a key in use
 * is refreshed in the background before it expires); a revoked key therefore stops
 * working within that TTL (docs/settings.md documents it). Unknown keys are cached for 5 s too, so
 * a flood of bad keys cannot hammer DynamoDB; concurrent first uses of a key share one read.
 */
/** A stored key with what the gateway reads of it: its role (stored or legacy) and its scopes without the legacy `admin`. */
type VerifiedKey = ApiKeyRecord & { effectiveRole: AuthContext['role']; grantedScopes: Scope[] };

const cache = new TtlCache<VerifiedKey>(() => config().authCacheTtlMs, 10_000, 5_000);

export function clearAuthCache(): void {
  cache.clear();
  byId.clear();
}

const verified = async (record: ApiKeyRecord | undefined): Promise<VerifiedKey | undefined> =>
  record && { ...record, effectiveRole: await roleOf(record), grantedScopes: record.scopes.filter((scope): scope is Scope => scope === 'gateway') };

const lookup = (secret: string): Promise<VerifiedKey | undefined> => cache.get(hashApiKey(secret), async () => verified(await findKeyBySecret(secret)));

/** Keys by id, for console sessions made from a key (same TTL as the key cache). */
const byId = new TtlCache<VerifiedKey>(() => config().authCacheTtlMs, 10_000, 5_000);

/** Where the gateway key was read from: its own header, or a client's only key header. */
export type KeyHeader = 'x-gateway-api-key' | 'x-api-key' | 'x-goog-api-key' | 'authorization' | 'query';

/**
 * The gateway key and the header it came from. `x-gateway-api-key` first; without it, a
 * client that can set only its API key (a coding agent with a base URL, say) sends the
 * gateway key where it sends any key: `x-api-key` (Anthropic clients) or
 * `x-goog-api-key` (Google clients), `Authorization: Bearer` (OpenAI clients), or, on the
 * routes that take one (the Gemini API's), the `?key=` query parameter (`queryKey`). With
 * `x-gateway-api-key` present those keep their meaning: the provider's key.
 */
export function gatewayKeyFrom(headers: Record<string, string>, queryKey?: string): { secret: string; header: KeyHeader } | undefined {
  const own = headers['x-gateway-api-key'];
  if (own) return { secret: own, header: 'x-gateway-api-key' };
  for (const header of ['x-api-key', 'x-goog-api-key'] as const) {
    const value = headers[header]?.trim();
    if (value) return { secret: value, header };
  }
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '')?.[1];
  if (bearer) return { secret: bearer, header: 'authorization' };
  if (queryKey) return { secret: queryKey, header: 'query' };
  return undefined;
}

/**
 * Verify the request's gateway key (what it may do is checked by `authorize`, roles.ts). A key read from `x-api-key`, `x-goog-api-key` or
 * `Authorization` is removed from `headers`, so nothing downstream forwards it upstream,
 * takes it for a provider key or logs it (the caller removes a `?key=` it passed).
 */
export async function authenticate(headers: Record<string, string>, method: string, queryKey?: string): Promise<AuthContext> {
  const found = gatewayKeyFrom(headers, queryKey);
  if (!found) {
    const session = sessionTokenFrom(headers);
    if (session) return authenticateSession(session, method, headers);
    throw unauthorized(
      'Missing gateway API key: send it in the `x-gateway-api-key` header (or, from a client that sets only its API key, as `Authorization: Bearer`, `x-api-key` or `x-goog-api-key`).',
      'missing_api_key',
    );
  }
  const { secret, header } = found;
  if (header !== 'x-gateway-api-key' && header !== 'query') delete headers[header];
  const invalid =
    header === 'x-gateway-api-key'
      ? 'Invalid gateway API key.'
      : `Invalid gateway API key (read from ${header === 'query' ? 'the `key` query parameter' : `\`${header}\``} because no \`x-gateway-api-key\` was sent).`;
  if (secret.length > 512) throw unauthorized(invalid);
  const record = await lookup(secret);
  if (!record) throw unauthorized(invalid);
  return contextOf(record);
}

function contextOf(record: VerifiedKey): AuthContext {
  if (record.status !== 'active') throw unauthorized('This gateway API key has been revoked.', 'revoked_api_key');
  if (record.expires_at !== null && record.expires_at * 1000 <= Date.now()) {
    throw unauthorized('This gateway API key has expired.', 'expired_api_key');
  }
  return {
    keyId: record.id,
    workspaceId: record.workspace_id,
    organisationId: record.organisation_id,
    role: record.effectiveRole,
    scopes: record.grantedScopes,
    defaultConfig: record.default_config ?? undefined,
    ...(record.allowed_mcp ? { allowedMcp: record.allowed_mcp } : {}),
  };
}

/**
 * A console session (the `gw_console` cookie, console-session.ts), when no key header was
 * sent. A session made from a key acts as that key does now: it stops with the key's
 * revocation or expiry (within the key cache's TTL) and follows a change of its role. The
 * cookie and CSRF headers are removed once read, so nothing downstream forwards them.
 */
export async function authenticateSession(token: string, method: string, headers: Record<string, string>): Promise<AuthContext> {
  delete headers.cookie;
  // Loaded on the first session: key-only traffic never loads the token code (jose).
  const { verifySessionToken, checkCsrf } = await import('./console-session');
  const claims = await verifySessionToken(token);
  checkCsrf(claims, method, headers);
  delete headers[CSRF_HEADER];
  return sessionContext(claims);
}

/** The principal a verified session stands for (a key session re-reads its key). */
export async function sessionContext(claims: SessionClaims): Promise<AuthContext> {
  const { invalidSession, ssoAuthContext } = await import('./console-session');
  if (claims.knd === 'sso') return ssoAuthContext(claims);
  const record = await byId.get(`${claims.ws}/${claims.sub}`, async () => verified(await getKeyById(claims.ws, claims.sub)));
  if (!record) throw invalidSession();
  return { ...contextOf(record), subject: record.id };
}
