/**
 * OpenAI's Uploads API (docs/files.md), for files above API Gateway's 10 MB request cap:
 * create an Upload, add parts of up to ~10 MB each, complete with the part ids in order.
 *
 * Each part is staged as its own object in the files bucket (tagged to expire in a day).
 * Complete streams the staged parts, in the caller's order, into one S3 multipart upload
 * (5 MB S3 parts, whatever the sizes of the caller's parts, so S3's 5 MiB minimum part never
 * reaches the caller), checks a batch file as `POST /v1/files` does, then completes the
 * Upload and writes the file record in one transaction.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { badRequest, GatewayError, invalidState, notFound } from '../shared/errors';
import { REPLAY_HEADER } from '../shared/http/idempotency-run';
import { ok } from '../shared/http/response';
import type { GatewayRequest, HttpResponse } from '../shared/http/types';
import { log } from '../shared/telemetry/logger';
import { validateBatchInput } from './batch-input';
import { deleteFile, deleteFiles, getFile, objectKey, putFile } from './bucket';
import { newFileId } from './store';
import { DEFAULT_BATCH_EXPIRY_SECONDS, toFileObject, type FileRecord } from './types';
import { parseCompleteUpload, parseCreateUpload, parsePartData } from './upload-input';
import {
  cancelUpload,
  completeUpload,
  createPartRecord,
  createUploadRecord,
  getUploadRecord,
  listParts,
  newPartId,
  newUploadId,
  partOfKey,
  PART_ID,
  UPLOAD_ID,
  UPLOAD_LIFETIME_SECONDS,
  uploadStatus,
  type PartRecord,
  type UploadObject,
  type UploadRecord,
} from './upload-store';

const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;
const nowSeconds = () => Math.floor(Date.now() / 1000);
const missing = (id: string) => notFound(`No such Upload object: ${id.slice(0, 64)}`, 'upload_id');

function toUploadObject(u: UploadRecord): UploadObject {
  return {
    id: u.id,
    object: 'upload',
    bytes: u.bytes,
    created_at: u.created_at,
    expires_at: u.expires_at,
    filename: u.filename,
    purpose: u.purpose,
    status: uploadStatus(u),
    file: u.file ? toFileObject(u.file) : null,
  };
}

const toPartObject = (p: PartRecord) => ({ id: p.id, object: 'upload.part', created_at: p.created_at, upload_id: p.upload_id });

async function uploadOf(req: GatewayRequest): Promise<UploadRecord> {
  const id = req.params.upload_id!;
  if (!UPLOAD_ID.test(id)) throw missing(id);
  const upload = await getUploadRecord(req.auth.workspaceId, id);
  if (!upload) throw missing(id);
  return upload;
}

/** Parts and complete need a pending, unexpired upload; anything else is a 400 naming its status. */
async function pendingUploadOf(req: GatewayRequest): Promise<UploadRecord> {
  const upload = await uploadOf(req);
  const status = uploadStatus(upload);
  if (status !== 'pending')
    throw invalidState(`The Upload ${upload.id} is ${status}: it takes no more parts and cannot be completed.`, 'upload_not_pending', 'upload_id');
  return upload;
}

export async function createUpload(req: GatewayRequest): Promise<HttpResponse> {
  const input = parseCreateUpload(req.json());
  const createdAt = nowSeconds();
  const upload: UploadRecord = {
    id: newUploadId(),
    workspace_id: req.auth.workspaceId,
    filename: input.filename,
    purpose: input.purpose,
    bytes: input.bytes,
    mime_type: input.mime_type,
    created_at: createdAt,
    expires_at: createdAt + UPLOAD_LIFETIME_SECONDS,
    ...(input.expiresAfterSeconds === undefined ? {} : { file_expires_after: input.expiresAfterSeconds }),
    status: 'pending',
  };
  if (!(await createUploadRecord(upload))) throw new Error(`upload id collision: ${upload.id}`);
  return ok(toUploadObject(upload));
}

function reusedKey(): GatewayError {
  return new GatewayError(
    422,
    'invalid_request_error',
    'This Idempotency-Key was already used for a part with other bytes. Use a new key for a new part.',
    'Idempotency-Key',
    'idempotency_key_reused',
  );
}

/** The part an Idempotency-Key made before, if it carried the same bytes; another part's key is a 422. */
async function replayedPart(workspaceId: string, uploadId: string, key: string, sha256: string): Promise<PartRecord | undefined> {
  const existing = await partOfKey(workspaceId, uploadId, key);
  if (existing && existing.sha256 !== sha256) throw reusedKey();
  return existing;
}

export async function addPart(req: GatewayRequest): Promise<HttpResponse> {
  const upload = await pendingUploadOf(req);
  const data = await parsePartData(req.headers['content-type'], req.body);
  const sha256 = createHash('sha256').update(data).digest('base64');
  const key = req.headers['idempotency-key'];
  if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) {
    throw badRequest('Invalid `Idempotency-Key`: expected 1 to 255 printable ASCII characters.', 'Idempotency-Key', 'invalid_idempotency_key');
  }
  const ws = req.auth.workspaceId;
  if (key) {
    const replay = await replayedPart(ws, upload.id, key, sha256);
    if (replay) return ok(toPartObject(replay), { [REPLAY_HEADER]: 'true' });
  }

  const part: PartRecord = {
    id: newPartId(),
    upload_id: upload.id,
    bytes: data.byteLength,
    sha256,
    object_key: '',
    created_at: nowSeconds(),
    ...(key ? { idempotency_key: key } : {}),
  };
  part.object_key = `${objectKey(ws, upload.id)}/${part.id}`;
  // The bytes first, then the record: a record never names bytes that are not there.
  await putFile({ key: part.object_key, body: Readable.from([Buffer.from(data)]), contentType: 'application/octet-stream', expiresInDays: 1 });
  if (await createPartRecord(ws, upload, part)) return ok(toPartObject(part));

  // A concurrent request with the same key won: its part is the answer, and these bytes go.
  await deleteFile(part.object_key);
  const winner = key ? await replayedPart(ws, upload.id, key, sha256) : undefined;
  if (!winner) throw new Error(`part record not written: ${part.id}`);
  return ok(toPartObject(winner), { [REPLAY_HEADER]: 'true' });
}

/** The parts `part_ids` names, in its order; an id that is not a part of this upload is a 400. */
function orderedParts(upload: UploadRecord, partIds: readonly string[], parts: readonly PartRecord[]): PartRecord[] {
  const byId = new Map(parts.map((p) => [p.id, p]));
  const ordered = partIds.map((id) => {
    const part = PART_ID.test(id) ? byId.get(id) : undefined;
    if (!part) throw badRequest(`\`part_ids\` names ${id.slice(0, 64)}, which is not a part of the Upload ${upload.id}.`, 'part_ids', 'invalid_value');
    return part;
  });
  const total = ordered.reduce((sum, p) => sum + p.bytes, 0);
  if (total !== upload.bytes) {
    throw badRequest(`The parts named hold ${total} bytes, but the Upload was created with \`bytes\`: ${upload.bytes}.`, 'part_ids', 'bytes_mismatch');
  }
  return ordered;
}

/** The staged parts' bytes, one after another, through `md5`; a part whose object is gone ends it with a 400. */
async function* concatenated(parts: readonly PartRecord[], md5: ReturnType<typeof createHash>): AsyncGenerator<Buffer> {
  for (const part of parts) {
    const object = await getFile(part.object_key);
    if (!object) throw badRequest(`The part ${part.id} is no longer stored; add it again.`, 'part_ids', 'part_missing');
    for await (const chunk of object.body as AsyncIterable<Buffer>) {
      md5.update(chunk);
      yield chunk;
    }
  }
}

/** Writes the assembled object; a batch file is read whole first and checked like a direct upload. */
async function assemble(upload: UploadRecord, parts: readonly PartRecord[], key: string, expiresIn: number | undefined): Promise<string> {
  const md5 = createHash('md5');
  let failure: unknown;
  const source = async function* () {
    try {
      yield* concatenated(parts, md5);
    } catch (err) {
      failure = err;
      throw err;
    }
  };
  let body: Readable;
  if (upload.purpose === 'batch') {
    const chunks: Buffer[] = [];
    for await (const chunk of source()) chunks.push(chunk);
    const whole = Buffer.concat(chunks);
    validateBatchInput(whole);
    body = Readable.from([whole]);
  } else {
    body = Readable.from(source());
  }
  try {
    await putFile({ key, body, contentType: upload.mime_type, expiresInDays: expiresIn === undefined ? undefined : Math.ceil(expiresIn / 86400) });
  } catch (err) {
    throw failure ?? err;
  }
  return md5.digest('hex');
}

export async function complete(req: GatewayRequest): Promise<HttpResponse> {
  const upload = await pendingUploadOf(req);
  const input = parseCompleteUpload(req.json());
  const ws = req.auth.workspaceId;
  const parts = await listParts(ws, upload.id);
  const ordered = orderedParts(upload, input.partIds, parts);

  const fileId = newFileId();
  const key = objectKey(ws, fileId);
  const expiresIn = upload.file_expires_after ?? (upload.purpose === 'batch' ? DEFAULT_BATCH_EXPIRY_SECONDS : undefined);
  const md5 = await assemble(upload, ordered, key, expiresIn);
  if (input.md5 && input.md5 !== md5) {
    await deleteFile(key);
    throw badRequest(`The parts' MD5 is ${md5}, not the \`md5\` given (${input.md5}).`, 'md5', 'checksum_mismatch');
  }

  const createdAt = nowSeconds();
  const file: FileRecord = {
    id: fileId,
    workspace_id: ws,
    object_key: key,
    bytes: upload.bytes,
    created_at: createdAt,
    expires_at: expiresIn === undefined ? null : createdAt + expiresIn,
    filename: upload.filename,
    purpose: upload.purpose,
    status: 'processed',
  };
  if (!(await completeUpload(upload, file))) {
    // Cancelled, expired or completed by a concurrent request meanwhile: this object is not the file.
    await deleteFile(key);
    const now = await uploadOf(req);
    if (now.status === 'completed') return ok(toUploadObject(now));
    throw invalidState(`The Upload ${upload.id} is ${uploadStatus(now)}: it cannot be completed.`, 'upload_not_pending', 'upload_id');
  }
  await discardParts(req, parts);
  return ok(toUploadObject({ ...upload, status: 'completed', file }));
}

export async function cancel(req: GatewayRequest): Promise<HttpResponse> {
  const upload = await uploadOf(req);
  const cancelled = await cancelUpload(req.auth.workspaceId, upload.id);
  if (!cancelled)
    throw invalidState(`The Upload ${upload.id} is ${uploadStatus(upload)}: only a pending Upload can be cancelled.`, 'upload_not_pending', 'upload_id');
  await discardParts(req, await listParts(req.auth.workspaceId, upload.id));
  return ok(toUploadObject(cancelled));
}

/** The staged part objects are no longer needed; one left behind expires with its one-day tag. */
async function discardParts(req: GatewayRequest, parts: readonly PartRecord[]): Promise<void> {
  try {
    await deleteFiles(parts.map((p) => p.object_key));
  } catch (err) {
    log.warn('staged upload parts not deleted (their expiry tag removes them)', { error: String(err) }, req.context);
  }
}
