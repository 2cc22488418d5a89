/**
 * OpenAI's Batches API, run by the gateway itself on any provider (docs/batches.md):
 * create, retrieve, list, cancel. Batches belong to the API key's workspace; another
 * workspace's batch or input file is a 404. The lines run as the creating key, with the
 * routing headers of the create request (a managed provider, a config, metadata).
 */
import { getFileRecord } from '../files/store';
import { FILE_ID } from '../files/types';
import { badRequest, conflict, notFound } from '../shared/errors';
import { idempotency } from '../shared/http/idempotency';
import { pageFromQuery } from '../shared/http/list';
import { ok } from '../shared/http/response';
import type { GatewayRequest, Route } from '../shared/http/types';
import { parseInput } from '../shared/validation';
import { log } from '../shared/telemetry/logger';
import { batchModeOf, initialNativeState, resolveNativeTarget, stopNativeJob } from './native/mode';
import { sendBatchMessage, sendNativeStep } from './queue';
import { createBatchSchema } from './schema';
import { createBatch, getBatch, listBatches, newBatchId, newBatchRecord, transitionBatch } from './store';
import { BATCH_ID, TERMINAL_STATUSES, toBatchObject, type BatchRecord } from './types';

/** The gateway headers a batch keeps for its lines: routing and logging, never a secret. */
const KEPT_HEADERS = /^x-gateway-(?!api-key$|trace-id$)/;

export function keptHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => KEPT_HEADERS.test(name)));
}

const missing = (id: string) => notFound(`No batch found with id '${id.slice(0, 64)}'.`, 'batch_id');
const nowSeconds = () => Math.floor(Date.now() / 1000);

async function batchOf(req: GatewayRequest): Promise<BatchRecord> {
  const id = req.params.batch_id!;
  if (!BATCH_ID.test(id)) throw missing(id);
  const batch = await getBatch(req.auth.workspaceId, id);
  if (!batch) throw missing(id);
  return batch;
}

async function create(req: GatewayRequest) {
  const input = parseInput(createBatchSchema, req.json());
  const fileMissing = notFound(`No such File object: ${input.input_file_id.slice(0, 64)}`, 'input_file_id');
  if (!FILE_ID.test(input.input_file_id)) throw fileMissing;
  const file = await getFileRecord(req.auth.workspaceId, input.input_file_id);
  if (!file) throw fileMissing;
  if (file.purpose !== 'batch') throw badRequest(`The input file must have purpose 'batch', not '${file.purpose}'.`, 'input_file_id', 'invalid_value');
  const mode = batchModeOf(req.headers);
  const native = mode === 'native' ? await resolveNativeTarget(req, input.endpoint) : undefined;
  const record = newBatchRecord({
    id: newBatchId(),
    workspace_id: req.auth.workspaceId,
    endpoint: input.endpoint,
    input_file_id: file.id,
    metadata: input.metadata ?? null,
    auth: req.auth,
    headers: keptHeaders(req.headers),
    total: 0,
    mode,
    ...(native ? { native: initialNativeState(native.provider.adapter.slug) } : {}),
  });
  await createBatch(record);
  if (native) await sendNativeStep(record);
  else await sendBatchMessage({ kind: 'validate', workspaceId: record.workspace_id, batchId: record.id });
  return ok(toBatchObject(record));
}

/** A batch read after its window, still running: it is ended now (its worker may be gone), partial output kept. */
export async function expireIfDue(batch: BatchRecord): Promise<BatchRecord> {
  // A native batch's window is its next poll's to see: it stops the provider's job and keeps what it answered.
  if (batch.mode === 'native') return batch;
  if ((batch.status !== 'in_progress' && batch.status !== 'validating') || Date.now() < batch.expires_at * 1000) return batch;
  const moved = await transitionBatch(batch, ['validating', 'in_progress'], { status: 'finalizing', ending: 'expired', finalizing_at: nowSeconds() });
  if (!moved) return (await getBatch(batch.workspace_id, batch.id)) ?? batch;
  await sendBatchMessage({ kind: 'finalize', workspaceId: batch.workspace_id, batchId: batch.id }).catch((err: unknown) =>
    log.error('batch finalize message failed; the next read sends it again', { batch_id: batch.id, error: String(err) }),
  );
  return moved;
}

async function retrieve(req: GatewayRequest) {
  return ok(toBatchObject(await expireIfDue(await batchOf(req))));
}

async function list(req: GatewayRequest) {
  const { limit, after } = pageFromQuery(req.query, { limit: 20, maxLimit: 100 });
  const page = await listBatches(req.auth.workspaceId, { limit, after });
  const data = page.items.map(toBatchObject);
  return ok({ object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: page.hasMore });
}

/** Moves a running batch to `cancelling` (a cancelled or cancelling one is answered as it is); a 409 when it has ended or is finalizing. */
export async function cancelBatch(batch: BatchRecord): Promise<BatchRecord> {
  if (batch.status === 'cancelling' || batch.status === 'cancelled') return batch;
  const moved = await transitionBatch(batch, ['validating', 'in_progress'], { status: 'cancelling', cancelling_at: nowSeconds() });
  if (!moved) {
    const current = (await getBatch(batch.workspace_id, batch.id)) ?? batch;
    if (current.status === 'cancelling' || current.status === 'cancelled') return current;
    const ended = TERMINAL_STATUSES.includes(current.status) ? 'has ended' : 'is finalizing';
    throw conflict(`Batch ${batch.id} ${ended} (status '${current.status}') and cannot be cancelled.`, 'batch_not_cancellable');
  }
  if (moved.mode === 'native') return stopAtProvider(moved);
  // The running chunk sees the cancel within a second; this message ends a batch no chunk is running for.
  await sendBatchMessage({ kind: 'finalize', workspaceId: batch.workspace_id, batchId: batch.id });
  return moved;
}

async function cancel(req: GatewayRequest) {
  return ok(toBatchObject(await cancelBatch(await batchOf(req))));
}

/** A native batch's job is stopped at the provider now; when that fails, its next step tries again. */
async function stopAtProvider(batch: BatchRecord): Promise<BatchRecord> {
  try {
    if (!(await stopNativeJob(batch))) return batch;
  } catch (err) {
    log.warn('native batch cancel at the provider failed; the next step tries again', { batch_id: batch.id, error: String(err) });
    return batch;
  }
  const native = { ...batch.native!, stop_requested_at: nowSeconds() };
  return (await transitionBatch(batch, ['cancelling'], { native })) ?? batch;
}

export const batchesRoutes: Route[] = [
  { method: 'POST', path: '/v1/batches', access: 'gateway', name: 'batches.create', use: [idempotency], handler: create },
  { method: 'GET', path: '/v1/batches', access: 'gateway', name: 'batches.list', handler: list },
  { method: 'GET', path: '/v1/batches/{batch_id}', access: 'gateway', name: 'batches.retrieve', handler: retrieve },
  { method: 'POST', path: '/v1/batches/{batch_id}/cancel', access: 'gateway', name: 'batches.cancel', handler: cancel },
];
