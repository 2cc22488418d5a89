import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { AwsJsonError, startAwsJsonServer } from './aws-json-server';

/**
 * A local stand-in for the two KMS operations envelope encryption uses (GenerateDataKey,
 * Decrypt), speaking the AWS JSON 1.1 protocol so the production code's KMS client works
 * unchanged through AWS_ENDPOINT_URL_KMS. Data keys are wrapped with AES-256-GCM under a
 * master key kept in a local key file, bound to the encryption context.
 */
function contextAad(ctx: unknown): Buffer {
  const entries = Object.entries((ctx ?? {}) as Record<string, string>).sort(([a], [b]) => a.localeCompare(b));
  return Buffer.from(JSON.stringify(entries));
}

function wrap(master: Buffer, plaintext: Buffer, ctx: unknown): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', master, iv);
  cipher.setAAD(contextAad(ctx));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

function unwrap(master: Buffer, blob: Buffer, ctx: unknown): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', master, blob.subarray(0, 12));
  decipher.setAAD(contextAad(ctx));
  decipher.setAuthTag(blob.subarray(12, 28));
  return Buffer.concat([decipher.update(blob.subarray(28)), decipher.final()]);
}

export function startLocalKms(masterKey: Buffer): Promise<{ endpoint: string; stop: () => Promise<void> }> {
  const keyId = 'arn:aws:kms:us-east-1:000000000000:key/local-provider-credentials';
  const invalid = () => new AwsJsonError('InvalidCiphertextException', 'The ciphertext or encryption context is invalid.');
  return startAwsJsonServer({
    targetPrefix: 'TrentService.',
    contentType: 'application/x-amz-json-1.1',
    service: 'local KMS',
    operations: {
      GenerateDataKey(input) {
        const plaintext = randomBytes(32);
        return {
          KeyId: keyId,
          Plaintext: plaintext.toString('base64'),
          CiphertextBlob: wrap(masterKey, plaintext, input.EncryptionContext).toString('base64'),
        };
      },
      Decrypt(input) {
        try {
          const blob = Buffer.from(String(input.CiphertextBlob), 'base64');
          return { KeyId: keyId, Plaintext: unwrap(masterKey, blob, input.EncryptionContext).toString('base64') };
        } catch {
          throw invalid();
        }
      },
    },
  });
}
