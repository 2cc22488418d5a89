/**
 * A native batch's input file read for the provider: each line checked as in gateway mode
 * (input.ts: checkLine, repeated `custom_id`s), the config's `override_params` applied, then
 * translated by the adapter. Lines that fail any of it are recorded as error lines (each once)
 * and never sent.
 */
import type { Readable } from 'node:stream';
import { MAX_BATCH_LINES } from '../../files/types';
import { errorResult } from '../answer';
import { checkLine, linesOf } from '../input';
import { recordLine } from '../store';
import type { BatchRecord, LineResult } from '../types';
import type { NativeTarget } from './mode';
import type { NativeBatchContext, SubmitLine } from './types';

/** What reading the input found: filled in as `lines` is consumed. */
export interface InputTally {
  total: number;
  rejected: number;
  tooMany: boolean;
}

/** While validating, an error line joins the batch (its count too). */
const OPEN_WHILE_VALIDATING = ['validating', 'in_progress'] as const;

/** The lines to send, in file order; error lines are recorded on the way. Stops early (tally.tooMany) past MAX_BATCH_LINES. */
export async function* submitLines(
  batch: BatchRecord,
  target: NativeTarget,
  ctx: NativeBatchContext,
  body: Readable,
  tally: InputTally,
): AsyncGenerator<SubmitLine> {
  const seen = new Set<string>();
  let model: string | undefined;
  const reject = async (result: LineResult) => {
    tally.rejected += 1;
    await recordLine(batch, result, OPEN_WHILE_VALIDATING);
  };
  for await (const { line, text } of linesOf(body)) {
    if (text.trim() === '') continue;
    tally.total += 1;
    if (tally.total > MAX_BATCH_LINES) {
      tally.tooMany = true;
      return;
    }
    const checked = checkLine(text, line, batch.endpoint);
    if (!checked.ok) {
      await reject(errorResult(line, checked.customId, checked.code, checked.message));
      continue;
    }
    if (seen.has(checked.customId)) {
      await reject(
        errorResult(
          line,
          checked.customId,
          'duplicate_custom_id',
          `Line ${line} repeats the \`custom_id\` '${checked.customId.slice(0, 64)}' of an earlier line.`,
        ),
      );
      continue;
    }
    seen.add(checked.customId);
    const requestBody = target.overrideParams ? { ...checked.body, ...target.overrideParams } : checked.body;
    const prepared = target.adapter.prepare(ctx, { line, customId: checked.customId, body: requestBody });
    if (!prepared.ok) {
      await reject(errorResult(line, checked.customId, prepared.code, prepared.message));
      continue;
    }
    if (target.adapter.oneModelPerJob) {
      model ??= prepared.model;
      if (prepared.model !== model) {
        const message = `Line ${line} asks for the model '${prepared.model.slice(0, 64)}', but ${target.adapter.name} runs one model per batch and this batch's is '${model.slice(0, 64)}'.`;
        await reject(errorResult(line, checked.customId, 'mismatched_model', message));
        continue;
      }
    }
    yield { line, customId: checked.customId, model: prepared.model, payload: prepared.payload };
  }
}

/** The input's `custom_id`s by file line and the reverse (first occurrence), for reading results back. */
export async function inputIds(body: Readable): Promise<{ lineOf: Map<string, number>; customIdOf: Map<number, string> }> {
  const lineOf = new Map<string, number>();
  const customIdOf = new Map<number, string>();
  for await (const { line, text } of linesOf(body)) {
    if (text.trim() === '') continue;
    try {
      const value = JSON.parse(text) as { custom_id?: unknown };
      if (typeof value?.custom_id !== 'string') continue;
      customIdOf.set(line, value.custom_id);
      if (!lineOf.has(value.custom_id)) lineOf.set(value.custom_id, line);
    } catch {
      // Not JSON: an error line already.
    }
  }
  return { lineOf, customIdOf };
}
