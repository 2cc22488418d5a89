/**
 * SigV4 signing of any HTTP request: the provider calls (Bedrock, its S3 files), the budget
 * alarms' CloudWatch calls and the bootstrap worker's Secrets Manager read. The storage
 * calls of ./json-client.ts, all one JSON POST on the request path, sign with aws4 instead
 * (cheaper per call). Uses @smithy/signature-v4, which encodes each
 * path segment a second time in the canonical request (`%3A` -> `%253A`), as every AWS
 * service except S3 expects; the wire path keeps the single encoding.
 */
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface SigV4Request {
  method: string;
  url: URL;
  /** Lower-case names; `host` is set from the URL. */
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

export interface SigV4Options {
  region: string;
  service: string;
  credentials: AwsCredentials;
  /** Fixed clock (tests). */
  signingDate?: Date;
  /** Lower-case header names left out of the signature (sent, but not signed). */
  unsignedHeaders?: Set<string>;
  /** S3 signs the path as sent (no second encoding) and needs `x-amz-content-sha256`. */
  s3?: boolean;
}

const sha256 = Hash.bind(null, 'sha256');

/** The request's headers plus `host`, `x-amz-date`, `x-amz-security-token` (if any) and `authorization`. */
export async function signHeaders(req: SigV4Request, opts: SigV4Options): Promise<Record<string, string>> {
  const { url } = req;
  const query: Record<string, string | string[]> = {};
  for (const [key, value] of url.searchParams) {
    const prev = query[key];
    query[key] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
  }
  // Signing keys are cached by the library per credentials, day, region and service, so a
  // signer per request costs nothing worth keeping one per credentials for.
  const signer = new SignatureV4({
    service: opts.service,
    region: opts.region,
    credentials: opts.credentials,
    sha256,
    applyChecksum: opts.s3 === true,
    uriEscapePath: opts.s3 !== true,
  });
  const signed = await signer.sign(
    {
      method: req.method,
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      // WHATWG URL keeps percent-encodings, so `%3A` reaches the signer as is.
      path: url.pathname,
      query,
      // Object.assign, not a spread literal with a key: several times faster in V8 (bench/README.md).
      headers: Object.assign({}, req.headers, { host: url.host }),
      body: req.body,
    },
    {
      ...(opts.signingDate ? { signingDate: opts.signingDate } : {}),
      ...(opts.unsignedHeaders ? { unsignableHeaders: opts.unsignedHeaders } : {}),
    },
  );
  return signed.headers as Record<string, string>;
}
