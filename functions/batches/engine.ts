/**
 * The batch engine: what the batch worker does with each message of the batch queue.
 *
 * - `validate`: read the input file once, count its requests, cut it into chunks of lines
 *   (byte ranges), record repeated `custom_id`s as error lines, move the batch to
 *   `in_progress` and queue the chunks.
 * - `chunk`: answer the chunk's lines that have no answer yet (GATEWAY_BATCH_CONCURRENCY at
 *   a time), each recorded once (store.ts: recordLine); stop within a second when the batch
 *   is cancelled or its window passes; the chunk that answers the last line finalizes.
 * - `finalize`: end a batch that is `cancelling` (or `finalizing`, or past its window).
 *
 * Every step can run again (a redelivery, a duplicate, a worker that died): it looks at the
 * batch first and does what is still to do. A line answered twice is recorded once.
 */
import { getFile } from '../files/bucket';
import { getFileRecord } from '../files/store';
import { MAX_BATCH_LINES } from '../files/types';
import { config } from '../shared/config';
import { log } from '../shared/telemetry/logger';
import { answerLine, errorResult } from './answer';
import { finalizeBatch } from './finalize';
import { linesOf, scanInput } from './input';
import { runNativeStep } from './native/lifecycle';
import { sendBatchMessage } from './queue';
import { answeredLines, getBatch, recordLine, transitionBatch } from './store';
import type { BatchError, BatchMessage, BatchRecord } from './types';

/** How often a running chunk looks at its batch (cancel, window). */
const WATCH_INTERVAL_MS = 500;

const nowSeconds = () => Math.floor(Date.now() / 1000);
const isPastWindow = (batch: BatchRecord) => Date.now() >= batch.expires_at * 1000;

/** Stops taking new lines: `in_progress` -> `finalizing`, ending as `ending`, then finalizes. */
async function endEarly(batch: BatchRecord, ending: 'expired' | 'failed', errors?: BatchError[]): Promise<void> {
  const moved = await transitionBatch(batch, ['validating', 'in_progress'], {
    status: 'finalizing',
    ending,
    finalizing_at: nowSeconds(),
    ...(errors ? { batch_errors: errors } : {}),
  });
  const current = moved ?? (await getBatch(batch.workspace_id, batch.id));
  if (current) await finalizeBatch(current);
}

/** Ends a batch that has to end: finalizing or cancelling, or running past its window. True when it did (or it had ended). */
async function settleIfEnding(batch: BatchRecord): Promise<boolean> {
  if (batch.status === 'finalizing' || batch.status === 'cancelling') {
    await finalizeBatch(batch);
    return true;
  }
  if ((batch.status === 'in_progress' || batch.status === 'validating') && isPastWindow(batch)) {
    await endEarly(batch, 'expired');
    return true;
  }
  return batch.status !== 'in_progress' && batch.status !== 'validating';
}

/** The chunk that answered the last line moves the batch to `finalizing` and writes its files. */
async function finishIfDone(batchId: { workspace_id: string; id: string }): Promise<void> {
  const batch = await getBatch(batchId.workspace_id, batchId.id);
  if (!batch) return;
  if (batch.status === 'in_progress' && batch.completed + batch.failed >= batch.total) {
    const moved = await transitionBatch(batch, ['in_progress'], { status: 'finalizing', ending: 'completed', finalizing_at: nowSeconds() });
    if (moved) await finalizeBatch(moved);
    return;
  }
  await settleIfEnding(batch);
}

const fail = (code: string, message: string): BatchError[] => [{ code, message, param: 'input_file_id', line: null }];

async function validate(batch: BatchRecord): Promise<void> {
  const file = await getFileRecord(batch.workspace_id, batch.input_file_id);
  const object = file && (await getFile(file.object_key));
  if (!object) return endEarly(batch, 'failed', fail('input_file_missing', `The input file ${batch.input_file_id} no longer exists.`));
  const scan = await scanInput(object.body, MAX_BATCH_LINES);
  if ('tooMany' in scan) return endEarly(batch, 'failed', fail('too_many_requests', `The input file holds more than ${MAX_BATCH_LINES} requests.`));
  if (scan.total === 0) return endEarly(batch, 'failed', fail('empty_file', 'The input file holds no requests.'));
  let running = batch;
  if (batch.status === 'validating') {
    const moved = await transitionBatch(batch, ['validating'], { status: 'in_progress', in_progress_at: nowSeconds(), total: scan.total });
    if (!moved) return; // cancelled meanwhile: the cancel's finalize message ends it
    running = moved;
  }
  for (const dup of scan.duplicates) {
    const message = `Line ${dup.line} repeats the \`custom_id\` '${dup.customId.slice(0, 64)}' of an earlier line.`;
    await recordLine(running, errorResult(dup.line, dup.customId, 'duplicate_custom_id', message));
  }
  for (const [i, chunk] of scan.chunks.entries()) {
    await sendBatchMessage({ kind: 'chunk', workspaceId: batch.workspace_id, batchId: batch.id, chunk: i, ...chunk });
  }
  log.info('batch validated', { batch_id: batch.id, total: scan.total, chunks: scan.chunks.length, duplicates: scan.duplicates.length });
  if (scan.duplicates.length) await finishIfDone(running);
}

/** Aborts `controller` once the batch is no longer running or its window has passed. */
function watch(batch: BatchRecord, controller: AbortController): () => void {
  const timer = setInterval(() => {
    if (isPastWindow(batch)) return controller.abort();
    getBatch(batch.workspace_id, batch.id).then(
      (current) => {
        if (current?.status !== 'in_progress') controller.abort();
      },
      (err: unknown) => log.warn('batch watch read failed', { batch_id: batch.id, error: String(err) }),
    );
  }, WATCH_INTERVAL_MS);
  return () => clearInterval(timer);
}

async function runChunk(batch: BatchRecord, msg: Extract<BatchMessage, { kind: 'chunk' }>): Promise<void> {
  const file = await getFileRecord(batch.workspace_id, batch.input_file_id);
  const object = file && (await getFile(file.object_key, { start: msg.start, end: msg.end }));
  if (!object) return endEarly(batch, 'failed', fail('input_file_missing', `The input file ${batch.input_file_id} was deleted while the batch ran.`));
  const answered = await answeredLines(batch, msg.firstLine, msg.lastLine);
  const controller = new AbortController();
  const unwatch = watch(batch, controller);
  const inFlight = new Set<Promise<void>>();
  const limit = config().batchConcurrency;
  let failure: unknown;
  const answer = async (line: number, text: string) => {
    const result = await answerLine(batch, line, text, controller.signal);
    if (!result) return;
    if ((await recordLine(batch, result)) === 'batch-closed') controller.abort();
  };
  try {
    for await (const { line, text } of linesOf(object.body, msg.firstLine, msg.start)) {
      if (controller.signal.aborted || failure) break;
      if (text.trim() === '' || answered.has(line)) continue;
      const task: Promise<void> = answer(line, text)
        .catch((err: unknown) => {
          failure ??= err;
          controller.abort();
        })
        .finally(() => inFlight.delete(task));
      inFlight.add(task);
      if (inFlight.size >= limit) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
  } finally {
    unwatch();
    object.body.destroy();
  }
  // A line that could not be recorded (a storage error) fails the message: it comes back, and only the unanswered lines run again.
  if (failure) throw failure;
  await finishIfDone(batch);
}

export async function handleBatchMessage(msg: BatchMessage): Promise<void> {
  const batch = await getBatch(msg.workspaceId, msg.batchId);
  if (!batch) {
    log.warn('batch message for a batch that does not exist; dropped', { batch_id: msg.batchId, kind: msg.kind });
    return;
  }
  if (batch.mode === 'native') {
    // A native batch moves only by the steps of the native queue (a cancel or an expiry is its next poll's to see).
    if (msg.kind === 'native') return runNativeStep(batch);
    log.warn('batch queue message for a native batch; dropped', { batch_id: batch.id, kind: msg.kind });
    return;
  }
  if (await settleIfEnding(batch)) return;
  if (msg.kind === 'validate') return validate(batch);
  if (msg.kind === 'chunk') {
    // A chunk queued before the batch left `validating` cannot exist; one that arrives early waits for the redelivery.
    if (batch.status !== 'in_progress') throw new Error(`batch ${batch.id} is ${batch.status}; chunk ${msg.chunk} will be retried`);
    return runChunk(batch, msg);
  }
}
