/**
 * A `purpose: batch` file is checked when it is uploaded, as OpenAI does: JSON Lines, each
 * line an object with `custom_id` (unique in the file), `method: "POST"`, a batch
 * endpoint `url` and an object `body`. The first bad line is refused with a 400 naming it.
 */
import { badRequest } from '../shared/errors';
import { MAX_BATCH_FILE_BYTES, MAX_BATCH_LINES } from './types';

export const BATCH_ENDPOINTS = ['/v1/chat/completions', '/v1/embeddings', '/v1/responses', '/v1/messages', '/v1/completions'] as const;

const refuse = (line: number, problem: string) => badRequest(`Invalid batch input file: line ${line} ${problem}.`, 'file', 'invalid_batch_input');

function checkLine(text: string, line: number, seen: Set<string>): void {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw refuse(line, 'is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw refuse(line, 'is not a JSON object');
  const { custom_id, method, url, body } = value as Record<string, unknown>;
  if (typeof custom_id !== 'string' || custom_id === '') throw refuse(line, 'has no `custom_id` string');
  if (seen.has(custom_id)) throw refuse(line, `repeats the \`custom_id\` '${custom_id.slice(0, 64)}'`);
  seen.add(custom_id);
  if (method !== 'POST') throw refuse(line, 'has a `method` other than "POST"');
  if (typeof url !== 'string' || !(BATCH_ENDPOINTS as readonly string[]).includes(url)) {
    throw refuse(line, `has a \`url\` that is not one of ${BATCH_ENDPOINTS.join(', ')}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw refuse(line, 'has no `body` object');
}

export function validateBatchInput(bytes: Uint8Array): void {
  if (bytes.byteLength > MAX_BATCH_FILE_BYTES) {
    throw badRequest(`A batch input file may hold at most ${MAX_BATCH_FILE_BYTES} bytes.`, 'file', 'file_too_large');
  }
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  const seen = new Set<string>();
  let line = 0;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    line += 1;
    const content = text.slice(start, end).trim();
    start = end + 1;
    if (content === '') {
      if (start < text.length) throw refuse(line, 'is empty');
      continue;
    }
    if (seen.size >= MAX_BATCH_LINES) throw refuse(line, `exceeds the limit of ${MAX_BATCH_LINES} requests`);
    checkLine(content, line, seen);
  }
  if (seen.size === 0) throw badRequest('Invalid batch input file: it holds no requests.', 'file', 'invalid_batch_input');
}
