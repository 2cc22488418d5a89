import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { createAwsJsonClient, KMS } from '../aws/json-client';
import { config } from '../config';

/**
 * Envelope encryption for secrets at rest: KMS makes a fresh AES-256 data
 * key per secret bundle, bound to an encryption context; the bundle is sealed locally with
 * AES-256-GCM and only the KMS-wrapped data key is stored beside it. Reading asks KMS to
 * unwrap the data key with the same context, so a sealed value copied to another record
 * (another workspace or slug) cannot be opened.
 *
 * One KMS client per container. The endpoint comes from config (AWS_ENDPOINT_URL_KMS
 * reaches infra/local/kms.ts in the local runtime).
 */
const kms = createAwsJsonClient(KMS);

/** The members used of KMS's answers; blobs are base64 in its JSON protocol. */
interface GenerateDataKeyOutput {
  KeyId?: string;
  Plaintext?: string;
  CiphertextBlob?: string;
}

interface DecryptOutput {
  Plaintext?: string;
}

/** What is stored: every part base64, none of it secret without KMS. */
export interface Envelope {
  /** Format version. */
  v: 1;
  alg: 'AES-256-GCM';
  /** The KMS key that wrapped the data key (as KMS reported it). */
  key_id: string;
  /** The data key, encrypted by KMS under the encryption context. */
  encrypted_key: string;
  iv: string;
  tag: string;
  ciphertext: string;
}

/** Non-secret values that bind a ciphertext to its owner (e.g. workspace and slug). */
export type EncryptionContext = Record<string, string>;

export class EnvelopeError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EnvelopeError';
  }
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

/** The context also authenticates the GCM ciphertext, in a canonical (sorted) form. */
function aad(context: EncryptionContext): Buffer {
  const entries = Object.entries(context).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Buffer.from(JSON.stringify(entries), 'utf8');
}

export async function encryptEnvelope(
  plaintext: string | Uint8Array,
  context: EncryptionContext,
  keyId: string = config().providerCredentialsKeyId,
): Promise<Envelope> {
  const out = await kms.send<GenerateDataKeyOutput>('GenerateDataKey', { KeyId: keyId, KeySpec: 'AES_256', EncryptionContext: context });
  const dataKey = Buffer.from(out.Plaintext ?? '', 'base64');
  try {
    if (!out.CiphertextBlob || dataKey.length !== KEY_BYTES) throw new EnvelopeError('KMS GenerateDataKey returned no usable data key.');
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', dataKey, iv);
    cipher.setAAD(aad(context));
    const body = typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext;
    const ciphertext = Buffer.concat([cipher.update(body), cipher.final()]);
    return {
      v: 1,
      alg: 'AES-256-GCM',
      key_id: out.KeyId ?? keyId,
      encrypted_key: out.CiphertextBlob,
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      ciphertext: ciphertext.toString('base64'),
    };
  } finally {
    dataKey.fill(0);
  }
}

/** Open an envelope; throws EnvelopeError when the context differs or anything was altered. */
export async function decryptEnvelope(envelope: Envelope, context: EncryptionContext): Promise<Buffer> {
  let out: DecryptOutput;
  try {
    out = await kms.send<DecryptOutput>('Decrypt', {
      // Re-encoded as the SDK did: KMS takes only canonical base64.
      CiphertextBlob: Buffer.from(envelope.encrypted_key, 'base64').toString('base64'),
      EncryptionContext: context,
      KeyId: envelope.key_id,
    });
  } catch (err) {
    throw new EnvelopeError('KMS could not decrypt the data key (wrong encryption context or altered key).', { cause: err });
  }
  const dataKey = Buffer.from(out.Plaintext ?? '', 'base64');
  try {
    if (dataKey.length !== KEY_BYTES) throw new EnvelopeError('KMS Decrypt returned no usable data key.');
    const iv = Buffer.from(envelope.iv, 'base64');
    const tag = Buffer.from(envelope.tag, 'base64');
    if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new EnvelopeError('Malformed envelope (iv or tag length).');
    const decipher = createDecipheriv('aes-256-gcm', dataKey, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(aad(context));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(Buffer.from(envelope.ciphertext, 'base64')), decipher.final()]);
  } catch (err) {
    if (err instanceof EnvelopeError) throw err;
    throw new EnvelopeError('The sealed value failed authentication (altered ciphertext, iv or tag).', { cause: err });
  } finally {
    dataKey.fill(0);
  }
}

/** Seal a JSON value (e.g. a bundle of provider credentials). */
export async function sealJson(value: unknown, context: EncryptionContext): Promise<Envelope> {
  return encryptEnvelope(JSON.stringify(value), context);
}

export async function openJson<T>(envelope: Envelope, context: EncryptionContext): Promise<T> {
  const plain = await decryptEnvelope(envelope, context);
  try {
    return JSON.parse(plain.toString('utf8')) as T;
  } finally {
    plain.fill(0);
  }
}
