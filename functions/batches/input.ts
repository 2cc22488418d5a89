/**
 * The batch input file, read from S3 as bytes: split into lines by byte offset (so a chunk
 * worker reads just its own range), and each line checked as OpenAI checks it when the
 * batch runs. A bad line is an error line of the batch, never a failed batch.
 */
import type { Readable } from 'node:stream';
import type { BatchEndpoint } from './types';
import { isObject } from '../shared/is-object';

/** Lines per chunk: one queue message, answered by one worker invocation. */
export const CHUNK_LINES = 100;

export interface Chunk {
  /** Byte range in the file, end exclusive. */
  start: number;
  end: number;
  /** File lines (1-based) of the range's first and last requests. */
  firstLine: number;
  lastLine: number;
}

export interface InputScan {
  /** Non-empty lines: the batch's requests. */
  total: number;
  chunks: Chunk[];
  /** Lines whose `custom_id` an earlier line already has. */
  duplicates: Array<{ line: number; customId: string }>;
}

export interface InputLine {
  line: number;
  text: string;
}

/** The lines of `body`, numbered from `firstLine`, with their byte offsets from `offset`. */
export async function* linesOf(body: Readable, firstLine = 1, offset = 0): AsyncGenerator<InputLine & { start: number; end: number }> {
  let pending: Buffer = Buffer.alloc(0);
  let line = firstLine;
  let position = offset;
  for await (const piece of body as AsyncIterable<Buffer>) {
    pending = pending.length ? Buffer.concat([pending, piece]) : piece;
    let from = 0;
    for (let nl = pending.indexOf(10, from); nl !== -1; nl = pending.indexOf(10, from)) {
      yield { line, text: pending.toString('utf8', from, nl), start: position, end: position + nl - from + 1 };
      position += nl - from + 1;
      line += 1;
      from = nl + 1;
    }
    pending = pending.subarray(from);
  }
  if (pending.length) yield { line, text: pending.toString('utf8'), start: position, end: position + pending.length };
}

function customIdOf(text: string): string | undefined {
  try {
    const value = JSON.parse(text) as { custom_id?: unknown };
    return typeof value?.custom_id === 'string' ? value.custom_id : undefined;
  } catch {
    return undefined;
  }
}

/** One pass over the file: its requests, their chunks, and the repeated `custom_id`s. */
export async function scanInput(body: Readable, maxLines: number): Promise<InputScan | { tooMany: true }> {
  const chunks: Chunk[] = [];
  const duplicates: InputScan['duplicates'] = [];
  const seen = new Set<string>();
  let total = 0;
  let current: Chunk | undefined;
  let inCurrent = 0;
  for await (const { line, text, start, end } of linesOf(body)) {
    if (text.trim() === '') continue;
    total += 1;
    if (total > maxLines) return { tooMany: true };
    if (!current || inCurrent === CHUNK_LINES) {
      current = { start, end, firstLine: line, lastLine: line };
      chunks.push(current);
      inCurrent = 0;
    }
    current.end = end;
    current.lastLine = line;
    inCurrent += 1;
    const customId = customIdOf(text);
    if (customId === undefined) continue;
    if (seen.has(customId)) duplicates.push({ line, customId });
    else seen.add(customId);
  }
  return { total, chunks, duplicates };
}

export type CheckedLine = { ok: true; customId: string; body: Record<string, unknown> } | { ok: false; customId: string | null; code: string; message: string };

/** A request line as the batch's endpoint takes it, or what is wrong with it (naming the line). */
export function checkLine(text: string, line: number, endpoint: BatchEndpoint): CheckedLine {
  const refuse = (code: string, problem: string, customId: string | null = null): CheckedLine => ({
    ok: false,
    customId,
    code,
    message: `Line ${line} ${problem}.`,
  });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return refuse('invalid_json_line', 'is not valid JSON');
  }
  if (!isObject(value)) return refuse('invalid_request', 'is not a JSON object');
  const { custom_id, method, url, body } = value;
  if (typeof custom_id !== 'string' || custom_id === '') return refuse('missing_required_parameter', 'has no `custom_id` string');
  if (method !== 'POST') return refuse('invalid_method', 'has a `method` other than "POST"', custom_id);
  if (url !== endpoint) return refuse('mismatched_endpoint', `has the \`url\` ${JSON.stringify(url)}, but the batch's endpoint is ${endpoint}`, custom_id);
  if (!isObject(body)) return refuse('missing_required_parameter', 'has no `body` object', custom_id);
  if (typeof body.model !== 'string' || body.model === '') return refuse('missing_required_parameter', 'has no `body.model` string', custom_id);
  if (body.stream === true) return refuse('invalid_value', 'asks for `stream: true`, which a batch cannot answer', custom_id);
  return { ok: true, customId: custom_id, body };
}
