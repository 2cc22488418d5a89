import { randomBytes } from 'node:crypto';
import { type CryptoKey, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { decryptEnvelope, encryptEnvelope } from '../shared/crypto/envelope';
import { putNew, queryAll } from '../shared/db/ops';
import { ALG, KID_PREFIX, SESSION_KEYS_PK, type SessionKeyItem } from '../shared/auth/session-keys';

/** The signing half of the console's session keys (../shared/auth/session-keys.ts): only the function that issues sessions loads it. */
const SIGNER_TTL_MS = 5 * 60_000;

export interface SigningKey {
  kid: string;
  alg: typeof ALG;
  key: CryptoKey;
}

const sealContext = (kid: string) => ({ purpose: 'console-session-signing-key', kid });

/** Write a new signing key; the newest one signs from then on. */
export async function addSessionSigningKey(): Promise<string> {
  const kid = `${KID_PREFIX}${Date.now().toString(36)}${randomBytes(6).toString('hex')}`;
  const { publicKey, privateKey } = await generateKeyPair('Ed25519', { extractable: true });
  const item: SessionKeyItem = {
    pk: SESSION_KEYS_PK,
    sk: kid,
    kid,
    public_jwk: await exportJWK(publicKey),
    sealed_private_jwk: await encryptEnvelope(JSON.stringify(await exportJWK(privateKey)), sealContext(kid)),
    created_at: Date.now(),
  };
  if (!(await putNew('control', item as unknown as SessionKeyItem & Record<string, unknown>))) throw new Error('session signing key collision');
  signer = undefined;
  return kid;
}

let signer: { value: Promise<SigningKey>; expiresAt: number } | undefined;

/** The newest signing key (made on first use), with its private half opened. */
export function currentSigningKey(): Promise<SigningKey> {
  if (signer && signer.expiresAt > Date.now()) return signer.value;
  const value = loadNewest().catch((err: unknown) => {
    signer = undefined;
    throw err;
  });
  signer = { value, expiresAt: Date.now() + SIGNER_TTL_MS };
  return value;
}

async function loadNewest(): Promise<SigningKey> {
  let items = await queryAll<SessionKeyItem>('control', SESSION_KEYS_PK, KID_PREFIX);
  if (items.length === 0) {
    // Two containers starting at once may each add one: both verify, the newest signs.
    await addSessionSigningKey();
    items = await queryAll<SessionKeyItem>('control', SESSION_KEYS_PK, KID_PREFIX);
  }
  const newest = items.reduce((a, b) => (b.created_at > a.created_at ? b : a));
  const jwk = JSON.parse((await decryptEnvelope(newest.sealed_private_jwk, sealContext(newest.kid))).toString('utf8')) as JWK;
  return { kid: newest.kid, alg: ALG, key: (await importJWK(jwk, ALG)) as CryptoKey };
}
