import { config } from '../config';
import { forbidden, unauthorized } from '../errors';
import type { AuthContext, Scope } from '../http/types';
import { findKeyBySecret, type ApiKeyRecord } from '../stores/keys';
import { TtlCache } from '../stores/ttl-cache';
import { hashApiKey } from './keys';

/**
 * Verifies `x-gateway-api-key`. Verified keys are cached per container for
 * AUTH_CACHE_TTL_MS (default 30 s), so the warm path makes no storage read (a key in use
 * is refreshed in the background before it expires); a revoked key therefore stops
 * working within that TTL (README documents it). Unknown keys are cached for 5 s too, so
 * a flood of bad keys cannot hammer DynamoDB; concurrent first uses of a key share one read.
 */
const cache = new TtlCache<ApiKeyRecord>(() => config().authCacheTtlMs, 10_000, 5_000);

export function clearAuthCache(): void {
  cache.clear();
}

const lookup = (secret: string): Promise<ApiKeyRecord | undefined> => cache.get(hashApiKey(secret), () => findKeyBySecret(secret));

export async function authenticate(headers: Record<string, string>, required: Scope): Promise<AuthContext> {
  const secret = headers['x-gateway-api-key'];
  if (!secret) {
    throw unauthorized('Missing gateway API key: send it in the `x-gateway-api-key` header.', 'missing_api_key');
  }
  if (secret.length > 512) throw unauthorized('Invalid gateway API key.');
  const record = await lookup(secret);
  if (!record) throw unauthorized('Invalid gateway API key.');
  if (record.status !== 'active') throw unauthorized('This gateway API key has been revoked.', 'revoked_api_key');
  if (record.expires_at !== null && record.expires_at * 1000 <= Date.now()) {
    throw unauthorized('This gateway API key has expired.', 'expired_api_key');
  }
  if (!record.scopes.includes(required) && !record.scopes.includes('admin')) {
    throw forbidden(`This gateway API key lacks the \`${required}\` scope required by this route.`);
  }
  return {
    keyId: record.id,
    workspaceId: record.workspace_id,
    organisationId: record.organisation_id,
    scopes: record.scopes,
  };
}
