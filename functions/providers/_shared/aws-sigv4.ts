/**
 * AWS settings and SigV4 signing for any built request: the proxy
 * signs arbitrary paths, methods and bodies too (functions/shared/aws/sigv4.ts signs).
 */
import { signHeaders, type AwsCredentials } from '../../shared/aws/sigv4';
import { badRequest } from '../../shared/errors';
import { SETTING } from '../../shared/provider-table';
import { requireSetting } from './cloud-common';
import type { ProviderTarget, UpstreamRequest } from '../types';

export type { AwsCredentials };

export const awsRegion = (target: ProviderTarget): string => requireSetting(target.aws?.region, SETTING.aws_region, 'AWS region');

/**
 * SigV4 credentials from the target; undefined when there are none but a Bedrock API key
 * (`Authorization: Bearer`) is given instead. Neither -> 400 naming the header.
 */
export function awsCredentials(target: ProviderTarget): AwsCredentials | undefined {
  const { accessKeyId, secretAccessKey, sessionToken } = target.aws ?? {};
  if (!accessKeyId?.trim() && !secretAccessKey?.trim()) {
    if (target.apiKey?.trim()) return undefined;
    throw badRequest(
      'Missing AWS credentials: send `x-gateway-aws-access-key-id` and `x-gateway-aws-secret-access-key` ' +
        '(plus `x-gateway-aws-session-token` for temporary credentials), or a Bedrock API key as `Authorization: Bearer`.',
      'x-gateway-aws-access-key-id',
      'missing_provider_setting',
    );
  }
  return {
    accessKeyId: requireSetting(accessKeyId, SETTING.aws_access_key_id, 'AWS access key id'),
    secretAccessKey: requireSetting(secretAccessKey, SETTING.aws_secret_access_key, 'AWS secret access key'),
    ...(sessionToken?.trim() ? { sessionToken: sessionToken.trim() } : {}),
  };
}

/** Headers in the signature: what AWS needs; forwarded extras stay unsigned (proxies may touch them). */
const isSigned = (name: string) => name === 'host' || name === 'content-type' || name.startsWith('x-amz-');

export interface SignOptions {
  region: string;
  service: string;
  credentials: AwsCredentials;
  /** Fixed clock (tests). */
  signingDate?: Date;
  /** S3's signing rules (path signed as sent, payload hash header). */
  s3?: boolean;
}

/** Returns `req` with `host`, `x-amz-date`, `x-amz-security-token` (if any) and `authorization` set. */
export async function signSigV4(req: UpstreamRequest, opts: SignOptions): Promise<UpstreamRequest> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    const lower = name.toLowerCase();
    if (lower !== 'authorization' && lower !== 'x-amz-date' && lower !== 'x-amz-security-token') headers[lower] = value;
  }
  const signed = await signHeaders(
    { method: req.method, url: new URL(req.url), headers, body: req.body },
    { ...opts, unsignedHeaders: new Set(Object.keys(headers).filter((n) => !isSigned(n))) },
  );
  return { ...req, headers: signed };
}
