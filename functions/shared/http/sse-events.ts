/**
 * Cuts an upstream SSE byte stream at event boundaries (a blank line), so what is forwarded
 * is always whole events: a stream that fails mid-event can still end with a clean error
 * event, and an event that never ends is noticed (`pendingBytes`) before it fills memory.
 * The usual chunk ends with `\n\n` and is returned as it is, with no copy.
 */

const LF = 10;
const CR = 13;
const isEol = (b: number) => b === LF || b === CR;

/**
 * Index just past the last blank line in `chunk` (the end of its last complete event), or
 * -1. `before1` and `before2` are the two bytes that preceded the chunk (-1 if none), so a
 * blank line split across reads is found. Line ends are LF, CR or CRLF, as in the SSE spec.
 */
export function lastEventEnd(chunk: Uint8Array, before1: number, before2: number): number {
  const at = (k: number) => (k >= 0 ? chunk[k]! : k === -1 ? before1 : k === -2 ? before2 : -1);
  for (let i = chunk.length - 1; i >= 0; i--) {
    const b = chunk[i]!;
    if (!isEol(b)) continue;
    // The line end that finishes at i starts one byte earlier when it is a CRLF.
    const start = b === LF && at(i - 1) === CR ? i - 1 : i;
    if (isEol(at(start - 1))) return i + 1;
    i = start;
  }
  return -1;
}

export class EventAligner {
  private held: Buffer[] = [];
  private heldBytes = 0;
  private last1 = -1;
  private last2 = -1;

  /** Bytes of the event still open (not yet forwarded). */
  get pendingBytes(): number {
    return this.heldBytes;
  }

  /** The complete events this chunk finishes (with what was held before), or undefined if none. */
  push(chunk: Buffer): Buffer | undefined {
    if (chunk.length === 0) return undefined;
    const end = lastEventEnd(chunk, this.last1, this.last2);
    this.last2 = chunk.length > 1 ? chunk[chunk.length - 2]! : this.last1;
    this.last1 = chunk[chunk.length - 1]!;
    if (end === chunk.length && this.heldBytes === 0) return chunk;
    if (end < 0) {
      this.held.push(chunk);
      this.heldBytes += chunk.length;
      return undefined;
    }
    const head = chunk.subarray(0, end);
    const out = this.heldBytes ? Buffer.concat([...this.held, head]) : head;
    this.held = end < chunk.length ? [chunk.subarray(end)] : [];
    this.heldBytes = chunk.length - end;
    return out;
  }

  /** What is left at the end of the input: an event the upstream did not terminate. */
  rest(): Buffer | undefined {
    if (!this.heldBytes) return undefined;
    const out = Buffer.concat(this.held);
    this.held = [];
    this.heldBytes = 0;
    return out;
  }
}
