/**
 * The lifecycle of a native batch, one step per message of the native queue (a standard queue
 * with delayed messages): each step looks at the batch and does what is still to do.
 *
 *   validating  -> read the input, record bad lines as error lines, submit the rest to the
 *                  provider's batch API -> in_progress (the job stored on the batch)
 *   in_progress -> poll the job (backoff: GATEWAY_BATCH_POLL_SECONDS growing to
 *                  GATEWAY_BATCH_POLL_MAX_SECONDS); past the window, ask the provider to stop
 *   cancelling  -> ask the provider to stop (once), poll until it has
 *   job ended   -> record each answered line once (the same conditional line items as
 *                  gateway mode) and log it, then finalize: the output and error files
 *
 * A provider that cannot be reached (NativeBatchUnavailable) is tried again at the next step,
 * for as long as the batch's window lasts; a refusal (NativeBatchRejected) fails the batch with
 * the provider's words, keeping the lines recorded so far.
 */
import { getFile } from '../../files/bucket';
import { getFileRecord } from '../../files/store';
import { MAX_BATCH_LINES } from '../../files/types';
import { config } from '../../shared/config';
import { GatewayError } from '../../shared/errors';
import { log } from '../../shared/telemetry/logger';
import { finalizeBatch } from '../finalize';
import { sendNativeStep } from '../queue';
import { getBatch, recordLine, transitionBatch } from '../store';
import type { BatchEnding, BatchError, BatchRecord, BatchStatus, NativeBatchState } from '../types';
import { NativeBatchRejected, NativeBatchUnavailable } from './errors';
import { inputIds, submitLines, type InputTally } from './input-lines';
import { lineResultOf, logNativeLine, newLineTraceId } from './line-record';
import { initialNativeState, nativeTargetOf, type NativeTarget } from './mode';
import type { NativeBatchContext, NativeJobRef, NativeJobState } from './types';

const nowSeconds = () => Math.floor(Date.now() / 1000);
const isPastWindow = (batch: BatchRecord) => Date.now() >= batch.expires_at * 1000;

/** Lines of a native batch still join it while it is cancelling: they arrive after the provider stopped. */
const OPEN_FOR_RESULTS: readonly BatchStatus[] = ['in_progress', 'cancelling'];

/** Seconds until the next step: the poll interval growing by half with each poll, capped. */
export function nextDelaySeconds(polls: number): number {
  const { batchPollSeconds: base, batchPollMaxSeconds: max } = config();
  return Math.max(1, Math.min(base * 1.5 ** Math.min(polls, 20), max));
}

const stateOf = (batch: BatchRecord): NativeBatchState => batch.native ?? initialNativeState('unknown');

/** Writes `native` (and `set`) while the batch is still in `batch.status`; the batch after, or undefined when its status moved. */
function saveNative(batch: BatchRecord, native: NativeBatchState, set: Partial<BatchRecord> = {}): Promise<BatchRecord | undefined> {
  return transitionBatch(batch, [batch.status], { ...set, native });
}

/** Schedules the next step, counting it as a poll (the delay grows). */
async function later(batch: BatchRecord, native: NativeBatchState = stateOf(batch)): Promise<void> {
  const next = { ...native, polls: native.polls + 1 };
  await saveNative(batch, next);
  await sendNativeStep(batch, nextDelaySeconds(native.polls));
}

const batchError = (code: string, message: string, param: string | null = null): BatchError[] => [{ code, message, param, line: null }];

/** Ends a batch that has not reached the end of its job: `finalizing` with `ending`, then its files. */
async function endNow(batch: BatchRecord, ending: BatchEnding, errors?: BatchError[]): Promise<void> {
  const from: BatchStatus[] = batch.status === 'cancelling' ? ['cancelling'] : ['validating', 'in_progress'];
  const moved = await transitionBatch(batch, from, {
    ...(batch.status === 'cancelling' ? {} : { status: 'finalizing' as const, ending }),
    finalizing_at: nowSeconds(),
    ...(errors ? { batch_errors: errors } : {}),
  });
  const current = moved ?? (await getBatch(batch.workspace_id, batch.id));
  if (current) await finalizeBatch(current);
}

function contextOf(batch: BatchRecord, target: NativeTarget): NativeBatchContext {
  return { workspaceId: batch.workspace_id, batchId: batch.id, endpoint: batch.endpoint, provider: target.provider, signal: new AbortController().signal };
}

async function inputBody(batch: BatchRecord) {
  const file = await getFileRecord(batch.workspace_id, batch.input_file_id);
  return file ? getFile(file.object_key) : undefined;
}

async function submit(batch: BatchRecord, target: NativeTarget): Promise<void> {
  const ctx = contextOf(batch, target);
  let job: NativeJobRef | undefined = target.adapter.findJob ? await target.adapter.findJob(ctx) : undefined;
  const tally: InputTally = { total: 0, rejected: 0, tooMany: false };
  const object = await inputBody(batch);
  if (!object) return endNow(batch, 'failed', batchError('input_file_missing', `The input file ${batch.input_file_id} no longer exists.`, 'input_file_id'));
  try {
    const lines = submitLines(batch, target, ctx, object.body, tally);
    if (job) {
      for await (const _ of lines); // counts the lines and records the bad ones, which the first run may not have finished
    } else {
      // The adapter consumes the lines while it uploads; a batch with no line to send creates no job.
      const first = await lines.next();
      if (!first.done && !tally.tooMany) job = await target.adapter.submit(ctx, prepend(first.value, lines));
    }
  } finally {
    object.body.destroy();
  }
  if (tally.tooMany)
    return endNow(batch, 'failed', batchError('too_many_requests', `The input file holds more than ${MAX_BATCH_LINES} requests.`, 'input_file_id'));
  if (tally.total === 0) return endNow(batch, 'failed', batchError('empty_file', 'The input file holds no requests.', 'input_file_id'));
  const native: NativeBatchState = { ...stateOf(batch), job: job ?? null, rejected: tally.rejected };
  const started = await transitionBatch(batch, ['validating'], { status: 'in_progress', in_progress_at: nowSeconds(), total: tally.total, native });
  log.info('native batch submitted', { batch_id: batch.id, provider: native.provider, job: job?.id, total: tally.total, rejected: tally.rejected });
  if (!started) {
    // Cancelled while it was being submitted: keep the job so the next step stops it.
    const current = await getBatch(batch.workspace_id, batch.id);
    const kept = current?.status === 'cancelling' && (await transitionBatch(current, ['cancelling'], { total: tally.total, native }));
    if (!kept && job) await target.adapter.cancel(ctx, job).catch(() => undefined);
    if (kept) await sendNativeStep(batch, 0);
    return;
  }
  if (!job) {
    // Every line was refused: the batch is complete with its error lines.
    const done = await transitionBatch(started, ['in_progress'], { status: 'finalizing', ending: 'completed', finalizing_at: nowSeconds() });
    if (done) await finalizeBatch(done);
    return;
  }
  await sendNativeStep(batch, nextDelaySeconds(0));
}

async function* prepend<T>(first: T, rest: AsyncIterator<T>): AsyncGenerator<T> {
  yield first;
  for (let next = await rest.next(); !next.done; next = await rest.next()) yield next.value;
}

/** Records every line the ended job answered (each once) and logs it. */
async function collect(batch: BatchRecord, target: NativeTarget, job: NativeJobRef): Promise<void> {
  const object = await inputBody(batch);
  const ids = object ? await inputIds(object.body) : { lineOf: new Map<string, number>(), customIdOf: new Map<number, string>() };
  const ctx = { ...contextOf(batch, target), lineOf: (id: string) => ids.lineOf.get(id), customIdOf: (line: number) => ids.customIdOf.get(line) };
  let recorded = 0;
  for await (const result of target.adapter.results(ctx, job)) {
    const customId = ids.customIdOf.get(result.line) ?? null;
    const traceId = newLineTraceId();
    const outcome = await recordLine(batch, lineResultOf(result, customId, traceId), OPEN_FOR_RESULTS);
    if (outcome === 'batch-closed') return;
    if (outcome === 'recorded') {
      recorded += 1;
      await logNativeLine(batch, target, result, customId, traceId);
    }
  }
  log.info('native batch results recorded', { batch_id: batch.id, recorded });
}

const ENDING_OF: Record<Exclude<NativeJobState['status'], 'in_progress' | 'cancelling'>, BatchEnding> = {
  completed: 'completed',
  failed: 'failed',
  expired: 'expired',
  cancelled: 'cancelled',
};

async function pollJob(batch: BatchRecord, target: NativeTarget, job: NativeJobRef): Promise<void> {
  const ctx = contextOf(batch, target);
  let native = stateOf(batch);
  const pastWindow = isPastWindow(batch);
  if ((batch.status === 'cancelling' || pastWindow) && native.stop_requested_at === null) {
    await target.adapter.cancel(ctx, job);
    native = { ...native, stop_requested_at: nowSeconds() };
    const saved = await saveNative(batch, native, pastWindow && batch.status === 'in_progress' ? { ending: 'expired' } : {});
    if (!saved) return sendNativeStep(batch, 0); // its status moved meanwhile: look again
    batch = saved;
  }
  const state = await target.adapter.poll(ctx, job);
  const current: NativeJobRef = state.job ?? job;
  native = { ...native, job: current, provider_status: state.providerStatus, provider_counts: state.counts ?? native.provider_counts, polled_at: nowSeconds() };
  if (state.status === 'in_progress' || state.status === 'cancelling') return later(batch, native);
  const saved = await saveNative(batch, native);
  if (!saved) return sendNativeStep(batch, 0);
  await collect(saved, target, current);
  if (saved.status === 'cancelling') return endNow(saved, 'cancelled');
  const ending = saved.ending ?? ENDING_OF[state.status];
  const errors = state.status === 'failed' ? (state.errors ?? []).map((e) => ({ code: e.code, message: e.message, param: null, line: null })) : undefined;
  const moved = await transitionBatch(saved, ['in_progress'], {
    status: 'finalizing',
    ending,
    finalizing_at: nowSeconds(),
    ...(errors?.length ? { batch_errors: errors } : {}),
  });
  const finishing = moved ?? (await getBatch(batch.workspace_id, batch.id));
  if (finishing) await finalizeBatch(finishing);
}

/** The refusal as the batch's errors. */
function rejectedErrors(err: NativeBatchRejected | GatewayError): BatchError[] {
  return batchError(err.code ?? 'provider_error', err.message, err instanceof GatewayError ? (err.param ?? null) : null);
}

/** One step of a native batch (the native queue's message). */
export async function runNativeStep(batch: BatchRecord): Promise<void> {
  if (batch.status === 'finalizing') {
    await finalizeBatch(batch);
    return;
  }
  if (batch.status !== 'validating' && batch.status !== 'in_progress' && batch.status !== 'cancelling') return;
  const job = batch.native?.job;
  if (!job && batch.status === 'cancelling') return endNow(batch, 'cancelled');
  if (!job && batch.status === 'validating' && isPastWindow(batch)) return endNow(batch, 'expired');
  try {
    const target = await nativeTargetOf(batch);
    if (!job) return await submit(batch, target);
    return await pollJob(batch, target, job);
  } catch (err) {
    if (err instanceof NativeBatchUnavailable) {
      log.warn('native batch provider unavailable; trying again later', { batch_id: batch.id, error: err.message });
      const current = await getBatch(batch.workspace_id, batch.id);
      if (current) await later(current);
      return;
    }
    if (err instanceof NativeBatchRejected || err instanceof GatewayError) {
      log.warn('native batch refused by its provider; failed', { batch_id: batch.id, error: err.message });
      const current = (await getBatch(batch.workspace_id, batch.id)) ?? batch;
      return endNow(current, current.status === 'cancelling' ? 'cancelled' : 'failed', rejectedErrors(err));
    }
    throw err;
  }
}
