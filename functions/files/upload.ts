/**
 * `POST /v1/files`: the multipart form (`file`, `purpose`, `expires_after[anchor]`,
 * `expires_after[seconds]`) parsed by the runtime's own parser (undici's `formData()`), the
 * bytes streamed to S3, then the metadata written. The record comes last: a caller that
 * leaves, or an upload that fails, leaves no record (and S3 aborts the partial object).
 */
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { badRequest, GatewayError } from '../shared/errors';
import { objectKey, putFile } from './bucket';
import { validateBatchInput } from './batch-input';
import { createFileRecord, newFileId } from './store';
import {
  DEFAULT_BATCH_EXPIRY_SECONDS,
  FILE_PURPOSES,
  MAX_EXPIRY_SECONDS,
  MAX_FILE_BYTES,
  MIN_EXPIRY_SECONDS,
  type FilePurpose,
  type FileRecord,
} from './types';

export interface UploadInput {
  workspaceId: string;
  contentType: string | undefined;
  body: Buffer;
}

async function parseForm(contentType: string | undefined, body: Buffer): Promise<FormData> {
  if (!contentType?.toLowerCase().startsWith('multipart/form-data')) {
    throw badRequest('POST /v1/files takes a multipart/form-data body with the fields `file` and `purpose`.', 'file', 'invalid_content_type');
  }
  try {
    return await new Response(body, { headers: { 'content-type': contentType } }).formData();
  } catch {
    throw badRequest('The multipart/form-data body could not be parsed.', 'file', 'invalid_multipart');
  }
}

function purposeOf(form: FormData): FilePurpose {
  const purpose = form.get('purpose');
  if (typeof purpose !== 'string' || purpose === '') throw badRequest('Missing required parameter: `purpose`.', 'purpose', 'missing_required_parameter');
  if (!(FILE_PURPOSES as readonly string[]).includes(purpose)) {
    throw badRequest(`Invalid \`purpose\` '${purpose.slice(0, 64)}': expected one of ${FILE_PURPOSES.join(', ')}.`, 'purpose', 'invalid_value');
  }
  return purpose as FilePurpose;
}

function fileOf(form: FormData): File {
  const file = form.get('file');
  if (file === null) throw badRequest('Missing required parameter: `file`.', 'file', 'missing_required_parameter');
  if (typeof file === 'string') throw badRequest('`file` must be a file part (with a filename), not a text field.', 'file', 'invalid_value');
  if (file.size === 0) throw badRequest('`file` is empty.', 'file', 'invalid_value');
  if (file.size > MAX_FILE_BYTES)
    throw new GatewayError(413, 'invalid_request_error', `A file may hold at most ${MAX_FILE_BYTES} bytes.`, 'file', 'file_too_large');
  if (!file.name) throw badRequest('`file` has no filename.', 'file', 'invalid_value');
  return file;
}

/** Seconds until expiry from `expires_after`, the batch default, or undefined (kept until deleted). */
function expirySeconds(form: FormData, purpose: FilePurpose): number | undefined {
  const anchor = form.get('expires_after[anchor]');
  const seconds = form.get('expires_after[seconds]');
  if (anchor === null && seconds === null) return purpose === 'batch' ? DEFAULT_BATCH_EXPIRY_SECONDS : undefined;
  if (anchor !== 'created_at') throw badRequest("`expires_after[anchor]` must be 'created_at'.", 'expires_after[anchor]', 'invalid_value');
  const value = typeof seconds === 'string' && /^\d{1,8}$/.test(seconds) ? Number(seconds) : Number.NaN;
  if (!(value >= MIN_EXPIRY_SECONDS && value <= MAX_EXPIRY_SECONDS)) {
    throw badRequest(
      `\`expires_after[seconds]\` must be an integer from ${MIN_EXPIRY_SECONDS} (one hour) to ${MAX_EXPIRY_SECONDS} (30 days).`,
      'expires_after[seconds]',
      'invalid_value',
    );
  }
  return value;
}

export async function uploadFile(input: UploadInput, signal?: AbortSignal): Promise<FileRecord> {
  const form = await parseForm(input.contentType, input.body);
  const purpose = purposeOf(form);
  const file = fileOf(form);
  const expiresIn = expirySeconds(form, purpose);
  if (purpose === 'batch') validateBatchInput(new Uint8Array(await file.arrayBuffer()));

  const id = newFileId();
  const key = objectKey(input.workspaceId, id);
  const createdAt = Math.floor(Date.now() / 1000);
  await putFile(
    {
      key,
      body: Readable.fromWeb(file.stream() as NodeReadableStream),
      contentType: file.type || 'application/octet-stream',
      expiresInDays: expiresIn === undefined ? undefined : Math.ceil(expiresIn / 86400),
    },
    signal,
  );
  const record: FileRecord = {
    id,
    workspace_id: input.workspaceId,
    object_key: key,
    bytes: file.size,
    created_at: createdAt,
    expires_at: expiresIn === undefined ? null : createdAt + expiresIn,
    filename: file.name,
    purpose,
    status: 'processed',
  };
  await createFileRecord(record);
  return record;
}
