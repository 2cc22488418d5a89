/**
 * OpenAI's Files API on S3 (docs/files.md): upload, list, retrieve, content (streamed from
 * S3), delete; and its Uploads API for files above the 10 MB request cap (./uploads.ts).
 * Files belong to the API key's workspace; another workspace's file is a 404.
 */
import { notFound } from '../shared/errors';
import { listObject, pageFromQuery } from '../shared/http/list';
import { ok } from '../shared/http/response';
import type { GatewayRequest, HttpResponse, Route } from '../shared/http/types';
import { queryEnum } from '../shared/validation';
import { deleteFile, getFile } from './bucket';
import { deleteFileRecord, getFileRecord, listFileRecords } from './store';
import { FILE_ID, FILE_PURPOSES, OUTPUT_FILE_PURPOSES, toFileObject, type FileRecord } from './types';
import { uploadFile } from './upload';
import { addPart, cancel, complete, createUpload } from './uploads';
import { idempotency } from '../shared/http/idempotency';

const missing = (id: string) => notFound(`No such File object: ${id.slice(0, 64)}`, 'file_id');

async function fileOf(req: GatewayRequest): Promise<FileRecord> {
  const id = req.params.file_id!;
  if (!FILE_ID.test(id)) throw missing(id);
  const record = await getFileRecord(req.auth.workspaceId, id);
  if (!record) throw missing(id);
  return record;
}

async function create(req: GatewayRequest) {
  const record = await uploadFile({ workspaceId: req.auth.workspaceId, contentType: req.headers['content-type'], body: req.body });
  return ok(toFileObject(record));
}

async function list(req: GatewayRequest) {
  const page = pageFromQuery(req.query, { limit: 10_000, maxLimit: 10_000 });
  const purpose = queryEnum(req.query.purpose, 'purpose', [...FILE_PURPOSES, ...OUTPUT_FILE_PURPOSES]);
  const result = await listFileRecords(req.auth.workspaceId, page, purpose);
  return ok(listObject(result.items.map(toFileObject), result.hasMore));
}

async function retrieve(req: GatewayRequest) {
  return ok(toFileObject(await fileOf(req)));
}

async function content(req: GatewayRequest): Promise<HttpResponse> {
  const record = await fileOf(req);
  const object = await getFile(record.object_key);
  if (!object) throw missing(record.id);
  return {
    statusCode: 200,
    headers: { 'content-type': 'application/octet-stream', 'content-length': String(object.bytes ?? record.bytes) },
    body: object.body,
  };
}

async function remove(req: GatewayRequest) {
  const record = await fileOf(req);
  if (!(await deleteFileRecord(req.auth.workspaceId, record.id))) throw missing(record.id);
  await deleteFile(record.object_key);
  return ok({ id: record.id, object: 'file', deleted: true });
}

export const filesRoutes: Route[] = [
  // No Idempotency-Key: its fingerprint is the raw body, and a multipart body gets a fresh
  // boundary on every send, so a retry would never match (docs/files.md).
  { method: 'POST', path: '/v1/files', access: 'gateway', name: 'files.create', handler: create },
  { method: 'GET', path: '/v1/files', access: 'gateway', name: 'files.list', handler: list },
  { method: 'GET', path: '/v1/files/{file_id}', access: 'gateway', name: 'files.retrieve', handler: retrieve },
  { method: 'GET', path: '/v1/files/{file_id}/content', access: 'gateway', name: 'files.content', handler: content },
  { method: 'DELETE', path: '/v1/files/{file_id}', access: 'gateway', name: 'files.delete', handler: remove },
  // Uploads (./uploads.ts): a part honours Idempotency-Key itself, by the hash of its `data`.
  { method: 'POST', path: '/v1/uploads', access: 'gateway', name: 'uploads.create', use: [idempotency], handler: createUpload },
  { method: 'POST', path: '/v1/uploads/{upload_id}/parts', access: 'gateway', name: 'uploads.parts.create', handler: addPart },
  { method: 'POST', path: '/v1/uploads/{upload_id}/complete', access: 'gateway', name: 'uploads.complete', handler: complete },
  { method: 'POST', path: '/v1/uploads/{upload_id}/cancel', access: 'gateway', name: 'uploads.cancel', handler: cancel },
];
