/**
 * File metadata in the jobs table, keyed by workspace so every read is tenant-scoped:
 *
 *   file  pk WS#<workspace>  sk FILE#<file-id>   (ids are time-ordered)
 *
 * The item is written only after its bytes are whole in S3 (./upload.ts), so a record never
 * points at a partial object. An expired file reads as absent at once; DynamoDB's TTL removes
 * its record (within days) and S3's lifecycle its bytes (within a day).
 */
import { listPage, type Page, type PageRequest } from '../shared/db/list';
import { deleteItem, getItem, putNew } from '../shared/db/ops';
import { timeOrderedId } from '../shared/ids';
import type { FileRecord, StoredFilePurpose } from './types';

const FILE_PREFIX = 'FILE#';

const fileKey = (workspaceId: string, fileId: string) => ({ pk: `WS#${workspaceId}`, sk: `${FILE_PREFIX}${fileId}` });

type Stored = FileRecord & { pk: string; sk: string; ttl?: number };

function strip(item: Stored): FileRecord {
  const { pk: _pk, sk: _sk, ttl: _ttl, ...rest } = item;
  return rest;
}

/** The item of a file record: an expiring file carries `ttl`, so DynamoDB deletes the record after `expires_at`. */
export function fileItem(record: FileRecord): Stored & Record<string, unknown> {
  return { ...fileKey(record.workspace_id, record.id), ...record, ...(record.expires_at === null ? {} : { ttl: record.expires_at }) };
}

const nowSeconds = () => Math.floor(Date.now() / 1000);
const isExpired = (r: FileRecord, now = nowSeconds()) => r.expires_at !== null && r.expires_at <= now;

export const newFileId = () => `file-${timeOrderedId()}`;

export async function createFileRecord(record: FileRecord): Promise<boolean> {
  return putNew('jobs', fileItem(record));
}

export async function getFileRecord(workspaceId: string, fileId: string): Promise<FileRecord | undefined> {
  const item = await getItem<Stored>('jobs', fileKey(workspaceId, fileId), true);
  if (!item || isExpired(item)) return undefined;
  return strip(item);
}

export async function listFileRecords(workspaceId: string, page: PageRequest, purpose?: StoredFilePurpose): Promise<Page<FileRecord>> {
  const result = await listPage<Stored>(
    {
      table: 'jobs',
      partition: `WS#${workspaceId}`,
      prefix: FILE_PREFIX,
      filter: {
        expression: `(attribute_type(#expires_at, :null) OR #expires_at > :now)${purpose ? ' AND #purpose = :purpose' : ''}`,
        names: { '#expires_at': 'expires_at', ...(purpose ? { '#purpose': 'purpose' } : {}) },
        values: { ':null': 'NULL', ':now': nowSeconds(), ...(purpose ? { ':purpose': purpose } : {}) },
      },
    },
    page,
  );
  return { items: result.items.map(strip), hasMore: result.hasMore };
}

/** Removes the record; false when it was already gone (a concurrent delete won). */
export async function deleteFileRecord(workspaceId: string, fileId: string): Promise<boolean> {
  return deleteItem('jobs', fileKey(workspaceId, fileId), 'attribute_exists(pk)');
}
