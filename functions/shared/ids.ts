import { randomFillSync } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

/**
 * Time-ordered ids: 10 characters of millisecond time then 16 of randomness, in
 * lowercase Crockford base32 (a ULID, lowercased). Lexicographic order is creation
 * order, so sort keys and list cursors need no separate timestamp. Monotonic within
 * a process: two ids made in the same millisecond still sort in creation order.
 */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
/** 32^9 .. 32^0: a time's base32 digits, most significant first (exact in a double). */
const TIME_PLACES = Array.from({ length: 10 }, (_, i) => 32 ** (9 - i));
const RANDOM_DIGITS = 16;
let lastTime = -1;
/** The previous id's random part, as base32 digit values, reused in place. */
const lastRandom = new Uint8Array(RANDOM_DIGITS);

// One getrandom call per 256 ids instead of one per id (the call and its Buffer dominated
// the cost of an id on the request-log path).
const RANDOM_POOL = Buffer.alloc(4096);
let poolOffset = RANDOM_POOL.length;

function drawRandom(): void {
  if (poolOffset + RANDOM_DIGITS > RANDOM_POOL.length) {
    randomFillSync(RANDOM_POOL);
    poolOffset = 0;
  }
  for (let i = 0; i < RANDOM_DIGITS; i++) lastRandom[i] = RANDOM_POOL[poolOffset + i]! & 31;
  poolOffset += RANDOM_DIGITS;
}

/** Increment the previous random part so ids stay ordered within one millisecond. */
function incrementRandom(): void {
  for (let i = RANDOM_DIGITS - 1; i >= 0; i--) {
    if (lastRandom[i]! < 31) {
      lastRandom[i]!++;
      return;
    }
    lastRandom[i] = 0;
  }
}

// Built digit by digit into one string: no arrays, copies or Buffer views per id.
export function timeOrderedId(now = Date.now()): string {
  const time = Math.max(now, lastTime);
  if (time === lastTime) incrementRandom();
  else drawRandom();
  lastTime = time;
  let out = '';
  for (let i = 0; i < TIME_PLACES.length; i++) out += ALPHABET[Math.floor(time / TIME_PLACES[i]!) % 32];
  for (let i = 0; i < RANDOM_DIGITS; i++) out += ALPHABET[lastRandom[i]!];
  return out;
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
