import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalKms } from '../../infra/local/kms';

// The KMS client is created when the module loads and config is parsed once, so the
// module is imported only after the local KMS endpoint is in the environment.
type EnvelopeModule = typeof import('../../functions/shared/crypto/envelope');
let envelope: EnvelopeModule;
let kms: { endpoint: string; stop: () => Promise<void> };

beforeAll(async () => {
  kms = await startLocalKms(randomBytes(32));
  process.env.AWS_ENDPOINT_URL_KMS = kms.endpoint;
  envelope = await import('../../functions/shared/crypto/envelope');
});
afterAll(async () => {
  await kms?.stop();
});

const context = { workspace_id: 'ws-1', slug: 'openai-prod' };
const secret = 'sk-live-0123456789abcdef-do-not-leak';

const flipFirstByte = (b64: string) => {
  const bytes = Buffer.from(b64, 'base64');
  bytes[0] = bytes[0]! ^ 0x01;
  return bytes.toString('base64');
};

describe('envelope encryption', () => {
  it('round-trips a secret, and the stored envelope does not contain it', async () => {
    const sealed = await envelope.encryptEnvelope(secret, context);
    expect(sealed).toMatchObject({ v: 1, alg: 'AES-256-GCM' });
    expect(Buffer.from(sealed.iv, 'base64')).toHaveLength(12);
    expect(Buffer.from(sealed.tag, 'base64')).toHaveLength(16);
    const json = JSON.stringify(sealed);
    expect(json).not.toContain(secret);
    expect(json).not.toContain(Buffer.from(secret).toString('base64'));
    const opened = await envelope.decryptEnvelope(sealed, context);
    expect(opened.toString('utf8')).toBe(secret);
  });

  it('round-trips JSON bundles and binary data, and context key order does not matter', async () => {
    const bundle = { api_key: secret, aws_secret_access_key: 'wJalr/K7MDENG+bPxRfiCY' };
    const sealed = await envelope.sealJson(bundle, context);
    expect(await envelope.openJson(sealed, { slug: context.slug, workspace_id: context.workspace_id })).toEqual(bundle);
    const bytes = randomBytes(100);
    expect(await envelope.decryptEnvelope(await envelope.encryptEnvelope(bytes, context), context)).toEqual(bytes);
  });

  it('uses a fresh data key and iv per value: the same secret seals differently', async () => {
    const a = await envelope.encryptEnvelope(secret, context);
    const b = await envelope.encryptEnvelope(secret, context);
    expect(a.encrypted_key).not.toBe(b.encrypted_key);
    expect(a.iv).not.toBe(b.iv);
    expect(a.ciphertext).not.toBe(b.ciphertext);
  });

  it('rejects a tampered ciphertext, tag, iv or wrapped data key', async () => {
    const sealed = await envelope.encryptEnvelope(secret, context);
    for (const field of ['ciphertext', 'tag', 'iv', 'encrypted_key'] as const) {
      const tampered = { ...sealed, [field]: flipFirstByte(sealed[field]) };
      await expect(envelope.decryptEnvelope(tampered, context), field).rejects.toBeInstanceOf(envelope.EnvelopeError);
    }
  });

  it('rejects ciphertext moved under another data key (same context)', async () => {
    const a = await envelope.encryptEnvelope(secret, context);
    const b = await envelope.encryptEnvelope('another secret', context);
    await expect(envelope.decryptEnvelope({ ...a, encrypted_key: b.encrypted_key }, context)).rejects.toBeInstanceOf(envelope.EnvelopeError);
  });

  it('refuses to open with a different encryption context (other workspace, other slug, extra entry)', async () => {
    const sealed = await envelope.encryptEnvelope(secret, context);
    for (const wrong of [
      { ...context, workspace_id: 'ws-2' },
      { ...context, slug: 'openai-dev' },
      { ...context, extra: 'x' },
      { workspace_id: context.workspace_id },
    ]) {
      await expect(envelope.decryptEnvelope(sealed, wrong), JSON.stringify(wrong)).rejects.toBeInstanceOf(envelope.EnvelopeError);
    }
  });
});
