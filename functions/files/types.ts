/** The file object of OpenAI's Files API, and what the gateway stores beside it. */
export const FILE_PURPOSES = ['assistants', 'batch', 'fine-tune', 'vision', 'user_data'] as const;
export type FilePurpose = (typeof FILE_PURPOSES)[number];
/** Purposes of files the gateway writes itself (a batch's output and error files): listed and read, never uploaded. */
export const OUTPUT_FILE_PURPOSES = ['batch_output'] as const;
export type StoredFilePurpose = FilePurpose | (typeof OUTPUT_FILE_PURPOSES)[number];

export interface FileObject {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  expires_at: number | null;
  filename: string;
  purpose: StoredFilePurpose;
  /** Deprecated by OpenAI but still in its shape; a stored file is always `processed`. */
  status: 'processed';
}

/** The metadata item: the public object plus where its bytes live. */
export interface FileRecord extends Omit<FileObject, 'object'> {
  workspace_id: string;
  /** S3 key of the bytes in the files bucket. */
  object_key: string;
}

export const FILE_ID = /^file-[0-9a-z]{26}$/;

/** OpenAI's cap on one file. Through API Gateway a request body is capped at 10 MB first (docs/files.md). */
export const MAX_FILE_BYTES = 512 * 1024 * 1024;
/** OpenAI's caps on a batch input file. */
export const MAX_BATCH_FILE_BYTES = 200 * 1024 * 1024;
export const MAX_BATCH_LINES = 50_000;

/** `expires_after[seconds]`: OpenAI accepts one hour to 30 days. */
export const MIN_EXPIRY_SECONDS = 3600;
export const MAX_EXPIRY_SECONDS = 30 * 24 * 3600;
/** A batch file without `expires_after` expires after 30 days, as at OpenAI; other purposes are kept. */
export const DEFAULT_BATCH_EXPIRY_SECONDS = MAX_EXPIRY_SECONDS;

export function toFileObject(r: FileRecord): FileObject {
  return {
    id: r.id,
    object: 'file',
    bytes: r.bytes,
    created_at: r.created_at,
    expires_at: r.expires_at ?? null,
    filename: r.filename,
    purpose: r.purpose,
    status: 'processed',
  };
}
