/**
 * A `purpose: batch` file is checked when it is uploaded as OpenAI checks it then: JSON Lines
 * under the size and line limits, with at least one request. What each line says (valid JSON,
 * `custom_id`, `method`, `url`, `body`) is checked when a batch runs it: a bad line is an
 * error line of that batch, not a refused upload (functions/batches/input.ts).
 */
import { badRequest } from '../shared/errors';
import { MAX_BATCH_FILE_BYTES, MAX_BATCH_LINES } from './types';

const NEWLINE = 10;

const isBlank = (bytes: Uint8Array, start: number, end: number) => {
  for (let i = start; i < end; i++) if (bytes[i] !== 32 && bytes[i] !== 9 && bytes[i] !== 13) return false;
  return true;
};

export function validateBatchInput(bytes: Uint8Array): void {
  if (bytes.byteLength > MAX_BATCH_FILE_BYTES) {
    throw badRequest(`A batch input file may hold at most ${MAX_BATCH_FILE_BYTES} bytes.`, 'file', 'file_too_large');
  }
  let requests = 0;
  for (let start = 0; start < bytes.length; ) {
    let end = bytes.indexOf(NEWLINE, start);
    if (end === -1) end = bytes.length;
    if (!isBlank(bytes, start, end) && ++requests > MAX_BATCH_LINES) {
      throw badRequest(`Invalid batch input file: it holds more than ${MAX_BATCH_LINES} requests.`, 'file', 'invalid_batch_input');
    }
    start = end + 1;
  }
  if (requests === 0) throw badRequest('Invalid batch input file: it holds no requests.', 'file', 'invalid_batch_input');
}
