/**
 * The end of a batch: its answered lines written out as the output file (answers with a 2xx)
 * and the error file (everything else), both files of the workspace (purpose
 * `batch_output`), then the terminal status. Only a batch that no line can join any more is
 * finalized (`finalizing`, `cancelling`: recordLine counts only while `in_progress`), so the
 * files hold every counted line, once. Running it again writes the same files under the
 * same ids (chosen at creation): a finalizer that died half-way is simply run again.
 */
import { Readable } from 'node:stream';
import { objectKey, putFile } from '../files/bucket';
import { createFileRecord } from '../files/store';
import type { FileRecord } from '../files/types';
import { log } from '../shared/telemetry/logger';
import { answeredResults, transitionBatch } from './store';
import type { BatchEnding, BatchRecord } from './types';

/** Output files are kept as long as OpenAI keeps them: 30 days. */
const OUTPUT_EXPIRY_SECONDS = 30 * 24 * 3600;

const nowSeconds = () => Math.floor(Date.now() / 1000);

interface Written {
  lines: number;
  fileId: string | null;
}

async function writeResults(batch: BatchRecord, ok: boolean): Promise<Written> {
  let lines = 0;
  let bytes = 0;
  async function* jsonl(): AsyncGenerator<Buffer> {
    for await (const result of answeredResults(batch)) {
      if (result.ok !== ok) continue;
      const line = Buffer.from(`${result.text}\n`);
      lines += 1;
      bytes += line.length;
      yield line;
    }
  }
  const fileId = ok ? batch.planned_output_file_id : batch.planned_error_file_id;
  const key = objectKey(batch.workspace_id, fileId);
  await putFile({ key, body: Readable.from(jsonl()), contentType: 'application/jsonl', expiresInDays: OUTPUT_EXPIRY_SECONDS / 86400 });
  if (lines === 0) return { lines, fileId: null };
  const createdAt = nowSeconds();
  const record: FileRecord = {
    id: fileId,
    workspace_id: batch.workspace_id,
    object_key: key,
    bytes,
    created_at: createdAt,
    expires_at: createdAt + OUTPUT_EXPIRY_SECONDS,
    filename: `${batch.id}_${ok ? 'output' : 'error'}.jsonl`,
    purpose: 'batch_output',
    status: 'processed',
  };
  await createFileRecord(record);
  return { lines, fileId };
}

const endingOf = (batch: BatchRecord): BatchEnding => (batch.status === 'cancelling' ? 'cancelled' : (batch.ending ?? 'completed'));

/** Writes the output and error files and ends the batch; does nothing to a batch that is not ending. */
export async function finalizeBatch(batch: BatchRecord): Promise<BatchRecord | undefined> {
  if (batch.status !== 'finalizing' && batch.status !== 'cancelling') return undefined;
  const ending = endingOf(batch);
  const [output, errors] = [await writeResults(batch, true), await writeResults(batch, false)];
  const ended = await transitionBatch(batch, [batch.status], {
    status: ending,
    [`${ending}_at`]: nowSeconds(),
    output_file_id: output.fileId,
    error_file_id: errors.fileId,
    // The files are the truth: the counts say what they hold.
    completed: output.lines,
    failed: errors.lines,
  });
  log.info('batch ended', { batch_id: batch.id, status: ending, completed: output.lines, failed: errors.lines, ended: Boolean(ended) });
  return ended;
}
