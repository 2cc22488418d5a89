import { randomFillSync } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

/**
 * Time-ordered ids: 10 characters of millisecond time then 16 of randomness, in
 * lowercase Crockford base32 (a ULID, lowercased). Lexicographic order is creation
 * order, so sort keys and list cursors need no separate timestamp. Monotonic within
 * a process: two ids made in the same millisecond still sort in creation order.
 */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
let lastTime = -1;
let lastRandom: number[] = [];

function encodeTime(ms: number): string {
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

function nextRandom(now: number): number[] {
  if (now === lastTime) {
    // Increment the previous random part so ids stay ordered within one millisecond.
    const next = [...lastRandom];
    for (let i = next.length - 1; i >= 0; i--) {
      if (next[i]! < 31) {
        next[i]!++;
        return next;
      }
      next[i] = 0;
    }
    return next;
  }
  return Array.from(randomChunk(16), (b) => b % 32);
}

// One getrandom call per 256 ids instead of one per id (the call and its Buffer dominated
// the cost of an id on the request-log path).
const RANDOM_POOL = Buffer.alloc(4096);
let poolOffset = RANDOM_POOL.length;

function randomChunk(size: number): Buffer {
  if (poolOffset + size > RANDOM_POOL.length) {
    randomFillSync(RANDOM_POOL);
    poolOffset = 0;
  }
  poolOffset += size;
  return RANDOM_POOL.subarray(poolOffset - size, poolOffset);
}

export function timeOrderedId(now = Date.now()): string {
  const time = Math.max(now, lastTime);
  lastRandom = nextRandom(time);
  lastTime = time;
  return encodeTime(time) + lastRandom.map((n) => ALPHABET[n]).join('');
}

export const newId = (prefix: string) => prefix + timeOrderedId();
/** UUIDv7: a valid uuid whose order is creation order (prompts, policies, workspaces). */
export const uuid = () => uuidv7();

export const ID_PREFIX = {
  organisation: 'org_',
  apiKey: 'key_',
  config: 'pc-',
  thread: 'thread_',
  message: 'msg_',
  run: 'run_',
  step: 'step_',
  assistant: 'asst_',
  fineTuningJob: 'ftjob-',
  fineTuningEvent: 'ftevent-',
  log: 'log_',
  call: 'call_',
} as const;
