/**
 * The files bucket (FILES_BUCKET): bytes in, bytes out, streamed both ways. On AWS the
 * bucket is the data stack's (SSE-KMS, TLS only, lifecycle expiry by the `expires-days`
 * tag); locally fauxqs's S3, reached through AWS_ENDPOINT_URL_S3 with path-style URLs.
 */
import type { Readable } from 'node:stream';
import { DeleteObjectCommand, DeleteObjectsCommand, GetObjectCommand, NoSuchKey, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { config } from '../shared/config';

/** S3's smallest multipart part; a file above it is sent as a multipart upload, four parts in flight. */
const PART_BYTES = 5 * 1024 * 1024;
const PARTS_IN_FLIGHT = 4;

let client: S3Client | undefined;
function s3(): S3Client {
  client ??= new S3Client({ region: config().region, maxAttempts: 3, forcePathStyle: Boolean(process.env.AWS_ENDPOINT_URL_S3) });
  return client;
}

function bucket(): string {
  const name = process.env.FILES_BUCKET;
  if (!name) throw new Error('FILES_BUCKET is not set: the files bucket of the data stack (or the local runtime) is missing.');
  return name;
}

export const objectKey = (workspaceId: string, fileId: string) => `${workspaceId}/${fileId}`;

export interface PutFile {
  key: string;
  body: Readable;
  contentType: string;
  /** Days until S3's lifecycle removes the object (a tag the bucket's rules match), or none. */
  expiresInDays?: number;
}

/**
 * Streams the body to S3 (multipart above one part). A failed or aborted upload is aborted at
 * S3 too, so no partial object stays behind; `signal` ends it early.
 */
export async function putFile(file: PutFile, signal?: AbortSignal): Promise<void> {
  const upload = new Upload({
    client: s3(),
    params: {
      Bucket: bucket(),
      Key: file.key,
      Body: file.body,
      ContentType: file.contentType,
      ...(file.expiresInDays ? { Tagging: `expires-days=${file.expiresInDays}` } : {}),
    },
    partSize: PART_BYTES,
    queueSize: PARTS_IN_FLIGHT,
    leavePartsOnError: false,
    abortController: signal ? abortControllerOf(signal) : undefined,
  });
  await upload.done();
}

function abortControllerOf(signal: AbortSignal): AbortController {
  const controller = new AbortController();
  signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
  return controller;
}

/** The object's bytes as a stream (`range`: bytes start to end, end exclusive), or undefined when S3 has no such object. */
export async function getFile(key: string, range?: { start: number; end: number }): Promise<{ body: Readable; bytes?: number } | undefined> {
  try {
    const Range = range ? `bytes=${range.start}-${range.end - 1}` : undefined;
    const out = await s3().send(new GetObjectCommand({ Bucket: bucket(), Key: key, Range }));
    return { body: out.Body as Readable, bytes: out.ContentLength };
  } catch (err) {
    if (err instanceof NoSuchKey || (err as { name?: string }).name === 'NoSuchKey') return undefined;
    throw err;
  }
}

export async function deleteFile(key: string): Promise<void> {
  await s3().send(new DeleteObjectCommand({ Bucket: bucket(), Key: key }));
}

/** Deletes objects by key, a thousand a request (S3's limit); keys already gone are no error. */
export async function deleteFiles(keys: readonly string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 1000) {
    const batch = keys.slice(i, i + 1000).map((Key) => ({ Key }));
    await s3().send(new DeleteObjectsCommand({ Bucket: bucket(), Delete: { Objects: batch, Quiet: true } }));
  }
}
