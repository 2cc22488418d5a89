/**
 * A line's answer as the output or error file holds it, with the engine's retry rule: a 429
 * (a provider's, or a rate-limit policy's) waits and tries again for as long as the batch
 * runs, so a line waits for its limit rather than failing; a 5xx is tried a few more times
 * with backoff; anything else is the line's answer.
 */
import { newId } from '../shared/ids';
import { checkLine } from './input';
import { callLine, MAX_ANSWER_BYTES, type LineAnswer } from './line-call';
import type { BatchRecord, LineResult } from './types';

export const SERVER_ERROR_RETRIES = 4;
const BACKOFF_BASE_MS = 250;
const BACKOFF_MAX_MS = 30_000;

const requestLineId = () => newId('batch_req_');

export function errorResult(line: number, customId: string | null, code: string, message: string): LineResult {
  const text = JSON.stringify({ id: requestLineId(), custom_id: customId, response: null, error: { code, message } });
  return { line, custom_id: customId, ok: false, text };
}

function answerResult(line: number, customId: string, answer: LineAnswer): LineResult {
  const ok = answer.status >= 200 && answer.status < 300;
  const text = JSON.stringify({
    id: requestLineId(),
    custom_id: customId,
    response: { status_code: answer.status, request_id: answer.requestId, body: answer.body },
    error: null,
  });
  if (Buffer.byteLength(text) > MAX_ANSWER_BYTES) {
    return errorResult(line, customId, 'response_too_large', `The answer to line ${line} exceeds the ${MAX_ANSWER_BYTES} bytes a batch keeps per line.`);
  }
  return { line, custom_id: customId, ok, text };
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

export function backoffMs(attempt: number, retryAfterMs?: number): number {
  const exponential = Math.min(BACKOFF_BASE_MS * 2 ** Math.min(attempt, 10), BACKOFF_MAX_MS);
  const jittered = exponential / 2 + Math.random() * (exponential / 2);
  return retryAfterMs === undefined ? jittered : Math.min(Math.max(retryAfterMs, jittered), BACKOFF_MAX_MS * 2);
}

/** The line's result, or undefined when the batch stopped (`signal`) before it had one. */
export async function answerLine(batch: BatchRecord, line: number, text: string, signal: AbortSignal): Promise<LineResult | undefined> {
  const checked = checkLine(text, line, batch.endpoint);
  if (!checked.ok) return errorResult(line, checked.customId, checked.code, checked.message);
  let serverErrors = 0;
  for (let attempt = 0; ; attempt++) {
    if (signal.aborted) return undefined;
    const answer = await callLine(batch, checked.body, signal);
    if (signal.aborted) return undefined;
    const retry = answer.status === 429 || (answer.status >= 500 && ++serverErrors <= SERVER_ERROR_RETRIES);
    if (!retry) return answerResult(line, checked.customId, answer);
    await pause(backoffMs(attempt, answer.retryAfterMs), signal);
  }
}
