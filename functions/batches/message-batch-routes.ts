/**
 * Anthropic's Message Batches API (`/v1/messages/batches`), on any provider and on the same
 * engine as the Batches API (docs/batches.md): the requests are written as the batch's input
 * file (a `batch` file of the workspace, one `/v1/messages` line each), and every line runs
 * the Messages route in-process as the creating key, with the create request's routing
 * headers. Every error of these routes is in Anthropic's shape.
 */
import { Readable } from 'node:stream';
import { deleteFiles, getFile, objectKey, putFile } from '../files/bucket';
import { createFileRecord, deleteFileRecord, getFileRecord, newFileId } from '../files/store';
import { DEFAULT_BATCH_EXPIRY_SECONDS, type FileRecord } from '../files/types';
import { toAnthropicError } from '../formats/messages/errors';
import { asGatewayError, badRequest, conflict, type GatewayError, notFound, payloadTooLarge } from '../shared/errors';
import { idempotency } from '../shared/http/idempotency';
import { json, ok } from '../shared/http/response';
import type { GatewayRequest, HttpResponse, Middleware, Route } from '../shared/http/types';
import { timeOrderedId } from '../shared/ids';
import { log } from '../shared/telemetry/logger';
import { parseInput, queryInt } from '../shared/validation';
import { linesOf } from './input';
import {
  answeredLine,
  createMessageBatchSchema,
  MAX_MESSAGE_BATCH_BYTES,
  MAX_MESSAGE_BATCH_REQUESTS,
  MESSAGE_BATCH_ID,
  MESSAGE_BATCH_PREFIX,
  processingStatus,
  toMessageBatch,
  unansweredAs,
  unansweredLine,
  type MessageBatchCreate,
} from './message-batch';
import { sendBatchMessage } from './queue';
import { cancelBatch, expireIfDue, keptHeaders } from './routes';
import { answeredResults, createBatch, deleteBatch, getBatch, listBatches, newBatchRecord } from './store';
import type { BatchRecord } from './types';

/** Anthropic's headers a line keeps besides the gateway's: its API version and betas (never its key). */
const ANTHROPIC_HEADERS = ['anthropic-version', 'anthropic-beta'];

const nowSeconds = () => Math.floor(Date.now() / 1000);

export function anthropicErrorOf(err: GatewayError): HttpResponse {
  const shaped = toAnthropicError(err);
  return json(shaped.status, shaped.body, shaped.headers);
}

const anthropicErrors: Middleware = async (req, next) => {
  try {
    return await next();
  } catch (err) {
    const error = asGatewayError(err);
    if (error.status >= 500) log.error('request failed', { route: 'messages.batches', error: err instanceof Error ? err.message : String(err) }, req.context);
    return anthropicErrorOf(error);
  }
};

const missing = (id: string) => notFound(`No message batch found with id '${id.slice(0, 64)}'.`, 'message_batch_id');

async function batchOf(req: GatewayRequest): Promise<BatchRecord> {
  const id = req.params.message_batch_id!;
  if (!MESSAGE_BATCH_ID.test(id)) throw missing(id);
  const batch = await getBatch(req.auth.workspaceId, id);
  if (!batch) throw missing(id);
  return batch;
}

function refuseDuplicates(input: MessageBatchCreate): void {
  const seen = new Map<string, number>();
  input.requests.forEach(({ custom_id }, i) => {
    const first = seen.get(custom_id);
    if (first !== undefined) {
      throw badRequest(
        `Invalid \`requests[${i}].custom_id\`: '${custom_id}' is the custom_id of requests[${first}] too; each request needs its own.`,
        `requests[${i}].custom_id`,
        'duplicate_custom_id',
      );
    }
    seen.set(custom_id, i);
  });
}

function routingHeaders(headers: Record<string, string>): Record<string, string> {
  const kept = keptHeaders(headers);
  for (const name of ANTHROPIC_HEADERS) if (headers[name]) kept[name] = headers[name];
  return kept;
}

/** The requests as the engine's input: one Batches API line per request, in order. */
async function writeInput(workspaceId: string, batchId: string, input: MessageBatchCreate, createdAt: number): Promise<FileRecord> {
  const id = newFileId();
  const key = objectKey(workspaceId, id);
  let bytes = 0;
  const lines = function* () {
    for (const { custom_id, params } of input.requests) {
      const line = Buffer.from(`${JSON.stringify({ custom_id, method: 'POST', url: '/v1/messages', body: params })}\n`);
      bytes += line.length;
      yield line;
    }
  };
  await putFile({ key, body: Readable.from(lines()), contentType: 'application/jsonl', expiresInDays: DEFAULT_BATCH_EXPIRY_SECONDS / 86400 });
  const record: FileRecord = {
    id,
    workspace_id: workspaceId,
    object_key: key,
    bytes,
    created_at: createdAt,
    expires_at: createdAt + DEFAULT_BATCH_EXPIRY_SECONDS,
    filename: `${batchId}_requests.jsonl`,
    purpose: 'batch',
    status: 'processed',
  };
  await createFileRecord(record);
  return record;
}

async function create(req: GatewayRequest) {
  // Anthropic's cap; the gateway's own request cap (MAX_BODY_BYTES, 10 MB on API Gateway) comes first when lower.
  if (req.body.length > MAX_MESSAGE_BATCH_BYTES) throw payloadTooLarge(MAX_MESSAGE_BATCH_BYTES);
  const input = parseInput(createMessageBatchSchema, req.json());
  refuseDuplicates(input);
  const createdAt = nowSeconds();
  const id = `${MESSAGE_BATCH_PREFIX}${timeOrderedId()}`;
  const file = await writeInput(req.auth.workspaceId, id, input, createdAt);
  const record = newBatchRecord({
    id,
    workspace_id: req.auth.workspaceId,
    endpoint: '/v1/messages',
    input_file_id: file.id,
    metadata: null,
    auth: req.auth,
    headers: routingHeaders(req.headers),
    total: input.requests.length,
    max_requests: MAX_MESSAGE_BATCH_REQUESTS,
  });
  await createBatch(record);
  await sendBatchMessage({ kind: 'validate', workspaceId: record.workspace_id, batchId: record.id });
  return ok(toMessageBatch(record, req));
}

async function retrieve(req: GatewayRequest) {
  return ok(toMessageBatch(await expireIfDue(await batchOf(req)), req));
}

/** Anthropic's paging: newest first; `after_id` pages to older batches, `before_id` to newer ones. */
async function list(req: GatewayRequest) {
  const limit = queryInt(req.query.limit, 'limit', 1, 1000, 20);
  const cursor = (name: 'after_id' | 'before_id') => {
    const value = req.query[name];
    if (value !== undefined && value !== '' && !MESSAGE_BATCH_ID.test(value))
      throw badRequest(`Invalid \`${name}\`: expected a message batch id.`, name, 'invalid_value');
    return value || undefined;
  };
  const page = await listBatches(req.auth.workspaceId, { limit, after: cursor('after_id'), before: cursor('before_id') }, MESSAGE_BATCH_PREFIX);
  const data = page.items.map((batch) => toMessageBatch(batch, req));
  return ok({ data, has_more: page.hasMore, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
}

async function cancel(req: GatewayRequest) {
  return ok(toMessageBatch(await cancelBatch(await batchOf(req)), req));
}

/** Only an ended batch is deleted: with its requests, its answers and the files that held them. */
async function remove(req: GatewayRequest) {
  const batch = await expireIfDue(await batchOf(req));
  if (processingStatus(batch) !== 'ended') {
    throw conflict(`Message batch ${batch.id} is still processing; cancel it and delete it once it has ended.`, 'batch_not_ended');
  }
  const fileIds = [batch.input_file_id, batch.output_file_id, batch.error_file_id].filter((id): id is string => Boolean(id));
  if (!(await deleteBatch(batch))) throw missing(batch.id);
  await deleteFiles(fileIds.map((id) => objectKey(batch.workspace_id, id)));
  for (const id of fileIds) await deleteFileRecord(batch.workspace_id, id);
  return ok({ id: batch.id, type: 'message_batch_deleted' });
}

/**
 * Every request's result in request order, streamed: its answer, or what the batch ended as
 * (canceled, expired) for one it never answered. The input is read once, beside the answers.
 */
async function* resultLines(batch: BatchRecord): AsyncGenerator<Buffer> {
  const answers = answeredResults(batch);
  const file = await getFileRecord(batch.workspace_id, batch.input_file_id);
  const input = file && (await getFile(file.object_key));
  if (!input) {
    // The requests are gone (their file was deleted): what was answered is all there is to say.
    for await (const answered of answers) yield Buffer.from(`${answeredLine(answered)}\n`);
    return;
  }
  const as = unansweredAs(batch);
  let next = await answers.next();
  try {
    for await (const { line, text } of linesOf(input.body)) {
      if (text.trim() === '') continue;
      while (!next.done && next.value.line < line) next = await answers.next();
      if (!next.done && next.value.line === line) yield Buffer.from(`${answeredLine(next.value)}\n`);
      else yield Buffer.from(`${unansweredLine((JSON.parse(text) as { custom_id: string }).custom_id, as)}\n`);
    }
  } finally {
    input.body.destroy();
  }
}

async function results(req: GatewayRequest) {
  const batch = await expireIfDue(await batchOf(req));
  if (processingStatus(batch) !== 'ended') {
    throw conflict(
      `Message batch ${batch.id} has not ended yet (processing_status '${processingStatus(batch)}'); its results come once it has.`,
      'batch_not_ended',
    );
  }
  return { statusCode: 200, headers: { 'content-type': 'application/x-jsonl' }, body: Readable.from(resultLines(batch)) };
}

const route = (r: Omit<Route, 'access' | 'errorResponse'>): Route => ({
  ...r,
  access: 'gateway',
  use: [anthropicErrors, ...(r.use ?? [])],
  // The kernel's own refusals (no key, a role that may not, a body too large) in Anthropic's shape too.
  errorResponse: anthropicErrorOf,
});

export const messageBatchesRoutes: Route[] = [
  route({ method: 'POST', path: '/v1/messages/batches', name: 'messages.batches.create', use: [idempotency], handler: create }),
  route({ method: 'GET', path: '/v1/messages/batches', name: 'messages.batches.list', handler: list }),
  route({ method: 'GET', path: '/v1/messages/batches/{message_batch_id}', name: 'messages.batches.retrieve', handler: retrieve }),
  route({ method: 'DELETE', path: '/v1/messages/batches/{message_batch_id}', name: 'messages.batches.delete', handler: remove }),
  route({ method: 'POST', path: '/v1/messages/batches/{message_batch_id}/cancel', name: 'messages.batches.cancel', handler: cancel }),
  route({ method: 'GET', path: '/v1/messages/batches/{message_batch_id}/results', name: 'messages.batches.results', handler: results }),
];
