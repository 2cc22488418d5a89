/**
 * The batch bucket of a Vertex AI provider (`vertex_batch_gcs_uri`) through Cloud Storage's
 * JSON API, with the provider's OAuth access token (scope cloud-platform covers Storage):
 * upload (`uploadType=media`), list by prefix, download (`alt=media`), delete. The root is
 * https://storage.googleapis.com, or `vertex_storage_endpoint`.
 */
import { SETTING } from '../../shared/provider-table';
import { requireSetting } from '../_shared/cloud-common';
import type { ProviderTarget, UpstreamRequest } from '../types';
import { authHeaders } from './index';

export interface GcsLocation {
  bucket: string;
  /** Empty, or ending in `/`. */
  prefix: string;
}

export function batchGcsLocation(target: ProviderTarget): GcsLocation {
  const uri = requireSetting(target.vertex?.batchGcsUri, SETTING.vertex_batch_gcs_uri, 'Cloud Storage location for Vertex AI batches');
  const parsed = parseGcsUri(uri)!;
  const prefix = parsed.name && !parsed.name.endsWith('/') ? `${parsed.name}/` : parsed.name;
  return { bucket: parsed.bucket, prefix };
}

export const gcsUri = (bucket: string, name: string): string => `gs://${bucket}/${name}`;

/** `gs://bucket/name` -> its parts. */
export function parseGcsUri(uri: string): { bucket: string; name: string } | undefined {
  const m = /^gs:\/\/([^/]+)\/?(.*)$/.exec(uri);
  return m ? { bucket: m[1]!, name: m[2]! } : undefined;
}

const root = (target: ProviderTarget) => (target.vertex?.storageEndpoint?.trim() || 'https://storage.googleapis.com').replace(/\/+$/, '');
const bucketPath = (bucket: string) => `b/${encodeURIComponent(bucket)}/o`;

export function uploadObject(target: ProviderTarget, bucket: string, name: string, body: Buffer, contentType: string): UpstreamRequest {
  return {
    url: `${root(target)}/upload/storage/v1/${bucketPath(bucket)}?uploadType=media&name=${encodeURIComponent(name)}`,
    method: 'POST',
    headers: { ...authHeaders(target), 'content-type': contentType },
    body,
  };
}

export function listObjects(target: ProviderTarget, bucket: string, prefix: string, pageToken?: string): UpstreamRequest {
  const query = `prefix=${encodeURIComponent(prefix)}&fields=items(name,size),nextPageToken${pageToken ? `&pageToken=${encodeURIComponent(pageToken)}` : ''}`;
  return { url: `${root(target)}/storage/v1/${bucketPath(bucket)}?${query}`, method: 'GET', headers: authHeaders(target) };
}

export function downloadObject(target: ProviderTarget, bucket: string, name: string): UpstreamRequest {
  return { url: `${root(target)}/storage/v1/${bucketPath(bucket)}/${encodeURIComponent(name)}?alt=media`, method: 'GET', headers: authHeaders(target) };
}

export function deleteObject(target: ProviderTarget, bucket: string, name: string): UpstreamRequest {
  return { url: `${root(target)}/storage/v1/${bucketPath(bucket)}/${encodeURIComponent(name)}`, method: 'DELETE', headers: authHeaders(target) };
}

/** A list page: object names and the next page's token. */
export function parseObjectList(body: unknown): { names: string[]; nextPageToken?: string } {
  const page = (body ?? {}) as { items?: Array<{ name?: unknown }>; nextPageToken?: unknown };
  return {
    names: (page.items ?? []).map((i) => i.name).filter((n): n is string => typeof n === 'string'),
    ...(typeof page.nextPageToken === 'string' && page.nextPageToken ? { nextPageToken: page.nextPageToken } : {}),
  };
}
