/**
 * Uploads API state in the jobs table, beside the file records and keyed by workspace:
 *
 *   upload  pk WS#<workspace>  sk UPLOAD#<upload-id>
 *   part    pk WS#<workspace>  sk UPLOAD#<upload-id>#PART#<part-id>
 *
 * Both carry `ttl` (a day after the upload expires), so DynamoDB removes abandoned ones; the
 * staged part objects carry the bucket's one-day expiry tag for the same reason.
 */
import type { FileObject, FilePurpose, FileRecord } from './types';
import { tableName } from '../shared/db/client';
import { getItem, putNew, queryAll, transactWrite, updateItem } from '../shared/db/ops';
import { timeOrderedId } from '../shared/ids';
import { fileItem } from './store';

export type UploadStatus = 'pending' | 'completed' | 'cancelled' | 'expired';

export interface UploadRecord {
  id: string;
  workspace_id: string;
  filename: string;
  purpose: FilePurpose;
  bytes: number;
  mime_type: string;
  created_at: number;
  expires_at: number;
  /** `expires_after[seconds]` of the file it becomes, or absent (the purpose's default). */
  file_expires_after?: number;
  status: Exclude<UploadStatus, 'expired'>;
  /** The File it became (status `completed`). */
  file?: FileRecord;
}

export interface PartRecord {
  id: string;
  upload_id: string;
  bytes: number;
  /** SHA-256 of the bytes, base64: an idempotent retry must carry the same ones. */
  sha256: string;
  /** Where the part's bytes are staged in the files bucket until complete. */
  object_key: string;
  created_at: number;
  /** The caller's Idempotency-Key, when it sent one. */
  idempotency_key?: string;
}

export const UPLOAD_ID = /^upload_[0-9a-z]{26}$/;
export const PART_ID = /^part_[0-9a-z]{26}$/;
/** An Upload takes parts for an hour, as at OpenAI. */
export const UPLOAD_LIFETIME_SECONDS = 3600;
/** Records outlive the upload by a day (answers to a late complete or cancel), then DynamoDB's TTL removes them. */
const RECORD_GRACE_SECONDS = 86400;

export const newUploadId = () => `upload_${timeOrderedId()}`;
export const newPartId = () => `part_${timeOrderedId()}`;

const partition = (workspaceId: string) => `WS#${workspaceId}`;
const uploadKey = (workspaceId: string, uploadId: string) => ({ pk: partition(workspaceId), sk: `UPLOAD#${uploadId}` });
const partPrefix = (uploadId: string) => `UPLOAD#${uploadId}#PART#`;
const partKey = (workspaceId: string, uploadId: string, partId: string) => ({ pk: partition(workspaceId), sk: `${partPrefix(uploadId)}${partId}` });
/** Where an Idempotency-Key of a part points: its part id. */
const partKeyClaim = (workspaceId: string, uploadId: string, key: string) => ({ pk: partition(workspaceId), sk: `UPLOAD#${uploadId}#KEY#${key}` });

const nowSeconds = () => Math.floor(Date.now() / 1000);

type Stored<T> = T & { pk: string; sk: string; ttl?: number };

function strip<T>(item: Stored<T>): T {
  const { pk: _pk, sk: _sk, ttl: _ttl, ...rest } = item;
  return rest as T;
}

export function uploadStatus(upload: UploadRecord, now = nowSeconds()): UploadStatus {
  return upload.status === 'pending' && upload.expires_at <= now ? 'expired' : upload.status;
}

export async function createUploadRecord(upload: UploadRecord): Promise<boolean> {
  return putNew('jobs', { ...uploadKey(upload.workspace_id, upload.id), ...upload, ttl: upload.expires_at + RECORD_GRACE_SECONDS });
}

export async function getUploadRecord(workspaceId: string, uploadId: string): Promise<UploadRecord | undefined> {
  const item = await getItem<Stored<UploadRecord>>('jobs', uploadKey(workspaceId, uploadId), true);
  return item ? strip(item) : undefined;
}

/** Records a part; false when its Idempotency-Key already names another part (a concurrent retry won). */
export async function createPartRecord(workspaceId: string, upload: UploadRecord, part: PartRecord): Promise<boolean> {
  const ttl = upload.expires_at + RECORD_GRACE_SECONDS;
  const item = { ...partKey(workspaceId, upload.id, part.id), ...part, ttl };
  if (!part.idempotency_key) return putNew('jobs', item);
  const notExists = 'attribute_not_exists(pk)';
  return transactWrite([
    {
      Put: {
        TableName: tableName('jobs'),
        Item: { ...partKeyClaim(workspaceId, upload.id, part.idempotency_key), part_id: part.id, ttl },
        ConditionExpression: notExists,
      },
    },
    { Put: { TableName: tableName('jobs'), Item: item, ConditionExpression: notExists } },
  ]);
}

/** The part an Idempotency-Key already made, if any. */
export async function partOfKey(workspaceId: string, uploadId: string, key: string): Promise<PartRecord | undefined> {
  const claim = await getItem<{ part_id: string }>('jobs', partKeyClaim(workspaceId, uploadId, key), true);
  if (!claim) return undefined;
  const item = await getItem<Stored<PartRecord>>('jobs', partKey(workspaceId, uploadId, claim.part_id), true);
  return item ? strip(item) : undefined;
}

export async function listParts(workspaceId: string, uploadId: string): Promise<PartRecord[]> {
  return (await queryAll<Stored<PartRecord>>('jobs', partition(workspaceId), partPrefix(uploadId))).map(strip);
}

const stillPending = {
  condition: '#status = :pending AND #expires_at > :now',
  values: () => ({ ':pending': 'pending', ':now': nowSeconds() }),
};

/**
 * Completes the upload and writes its file record in one transaction, only while the upload
 * is pending and unexpired: of two concurrent completes one wins, the other gets false.
 */
export async function completeUpload(upload: UploadRecord, file: FileRecord): Promise<boolean> {
  return transactWrite([
    {
      Update: {
        TableName: tableName('jobs'),
        Key: uploadKey(upload.workspace_id, upload.id),
        UpdateExpression: 'SET #status = :completed, #file = :file',
        ConditionExpression: stillPending.condition,
        ExpressionAttributeNames: { '#status': 'status', '#expires_at': 'expires_at', '#file': 'file' },
        ExpressionAttributeValues: { ':completed': 'completed', ':file': file, ...stillPending.values() },
      },
    },
    { Put: { TableName: tableName('jobs'), Item: fileItem(file), ConditionExpression: 'attribute_not_exists(pk)' } },
  ]);
}

/** Cancels a pending upload; undefined when it was no longer pending (or had expired). */
export async function cancelUpload(workspaceId: string, uploadId: string): Promise<UploadRecord | undefined> {
  const item = await updateItem<Stored<UploadRecord>>('jobs', uploadKey(workspaceId, uploadId), {
    set: { status: 'cancelled' },
    condition: stillPending.condition,
    conditionValues: stillPending.values(),
  });
  return item ? strip(item) : undefined;
}

export interface UploadObject {
  id: string;
  object: 'upload';
  bytes: number;
  created_at: number;
  expires_at: number;
  filename: string;
  purpose: FilePurpose;
  status: UploadStatus;
  file: FileObject | null;
}
