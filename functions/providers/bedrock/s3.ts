/**
 * The batch bucket of a Bedrock provider (`aws_batch_s3_uri`): S3 object requests signed
 * with the provider's own credentials (`s3Sign`: SigV4, service `s3`), sent like every other
 * provider request through the gateway's outbound client. Virtual-hosted URLs
 * (`https://{bucket}.s3.{region}.amazonaws.com/{key}`), or path-style under
 * `aws_s3_endpoint` when one is set.
 */
import { badRequest } from '../../shared/errors';
import { SETTING } from '../../shared/provider-table';
import { awsCredentials, awsRegion, signSigV4 } from '../_shared/aws-sigv4';
import { requireSetting } from '../_shared/cloud-common';
import type { ProviderTarget, UpstreamRequest } from '../types';

/** A place in the batch bucket: the bucket and a key prefix (empty, or ending in `/`). */
export interface S3Location {
  bucket: string;
  prefix: string;
}

/** The provider's `aws_batch_s3_uri` as bucket and prefix; a 400 naming the setting when absent or malformed. */
export function batchLocation(target: ProviderTarget): S3Location {
  const uri = requireSetting(target.aws?.batchS3Uri, SETTING.aws_batch_s3_uri, 'S3 location for Bedrock batches');
  const rest = uri.slice('s3://'.length);
  const slash = rest.indexOf('/');
  if (slash < 0) return { bucket: rest, prefix: '' };
  const prefix = rest.slice(slash + 1);
  return { bucket: rest.slice(0, slash), prefix: prefix && !prefix.endsWith('/') ? `${prefix}/` : prefix };
}

export const s3Uri = (bucket: string, key: string): string => `s3://${bucket}/${key}`;

/** `s3://bucket/key` -> its parts (the output location Bedrock reports). */
export function parseS3Uri(uri: string): { bucket: string; key: string } | undefined {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(uri);
  return m ? { bucket: m[1]!, key: m[2]! } : undefined;
}

/** RFC 3986 encoding of each key segment, as S3 computes the canonical path (`!'()*` too). */
const encodeKey = (key: string) =>
  key
    .split('/')
    .map((s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
    .join('/');

function objectUrl(target: ProviderTarget, bucket: string, key: string): string {
  const endpoint = target.aws?.s3Endpoint?.trim().replace(/\/+$/, '');
  if (endpoint) return `${endpoint}/${bucket}/${encodeKey(key)}`;
  return `https://${bucket}.s3.${awsRegion(target)}.amazonaws.com/${encodeKey(key)}`;
}

function credentialsFor(target: ProviderTarget) {
  const credentials = awsCredentials(target);
  if (!credentials) {
    throw badRequest(
      'Native Bedrock batches need AWS credentials (aws_access_key_id, aws_secret_access_key) to reach the batch bucket; a Bedrock API key cannot.',
      'aws_access_key_id',
      'missing_provider_setting',
    );
  }
  return credentials;
}

/** Signs an S3 request with the provider's credentials (service `s3`, S3's signing rules). */
export function s3Sign(req: UpstreamRequest, target: ProviderTarget): Promise<UpstreamRequest> {
  return signSigV4(req, { region: awsRegion(target), service: 's3', credentials: credentialsFor(target), s3: true });
}

/** Unsigned: `s3Sign` signs it last. */
export function putObject(target: ProviderTarget, bucket: string, key: string, body: Buffer, contentType: string): UpstreamRequest {
  return { url: objectUrl(target, bucket, key), method: 'PUT', headers: { 'content-type': contentType }, body };
}

export function getObject(target: ProviderTarget, bucket: string, key: string): UpstreamRequest {
  return { url: objectUrl(target, bucket, key), method: 'GET', headers: {} };
}
