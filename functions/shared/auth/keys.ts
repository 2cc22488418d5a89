import { createHash, randomBytes } from 'node:crypto';

/** Gateway keys: random, shown once, stored as SHA-256 only. */
export const KEY_PREFIX = 'gwk_';

export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function hashApiKey(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}
