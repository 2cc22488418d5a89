import { config } from '../config';
import { forbidden, unauthorized } from '../errors';
import type { AuthContext, Scope } from '../http/types';
import { findKeyBySecret, type ApiKeyRecord } from '../stores/keys';
import { hashApiKey } from './keys';

/**
 * Verifies `x-gateway-api-key`. Verified keys are cached per container for
 * AUTH_CACHE_TTL_MS (default 30 s), so the warm path makes no storage read;
 * a revoked key therefore stops working within that TTL (README documents it).
 * Unknown keys are cached briefly too, so a flood of bad keys cannot hammer DynamoDB.
 */
interface CacheEntry {
  record: ApiKeyRecord | null;
  expiresAt: number;
}

const MAX_ENTRIES = 10_000;
const NEGATIVE_TTL_MS = 5_000;
const cache = new Map<string, CacheEntry>();

export function clearAuthCache(): void {
  cache.clear();
}

async function lookup(secret: string): Promise<ApiKeyRecord | null> {
  const hash = hashApiKey(secret);
  const now = Date.now();
  const hit = cache.get(hash);
  if (hit && hit.expiresAt > now) return hit.record;
  const record = (await findKeyBySecret(secret)) ?? null;
  if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value as string);
  const ttl = config().authCacheTtlMs;
  cache.set(hash, { record, expiresAt: now + (record ? ttl : Math.min(ttl, NEGATIVE_TTL_MS)) });
  return record;
}

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
