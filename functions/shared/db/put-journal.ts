import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { threadId } from 'node:worker_threads';

/**
 * A write-ahead journal for writes a process holds after it has answered (request-log
 * records and their charges), so that a `kill -9` loses none of them: each entry is appended
 * to a file with one synchronous `write` when the write is scheduled, and the files are
 * replayed by the next process that starts on the same folder (replayJournal).
 *
 * Entries go to a new segment file every SEGMENT_MS; a segment is deleted once every entry in
 * it is settled and it is older than KEEP_MS, because a store can acknowledge a write it has
 * not yet made durable (DynamoDB Local commits up to a second or two later), and a crash of
 * the store with the process must find those entries still here. Replay must therefore be
 * idempotent (a conditional put). Only where a process outlives many requests and its folder
 * outlives the process: the local runtime with a data folder. Lambda on demand waits for the
 * write before the invocation ends, and needs none.
 */

/** A new segment at most this often. */
const SEGMENT_MS = 1_000;
/** A settled segment is kept this long for a store that acknowledges before it commits. */
const KEEP_MS = 5_000;

interface Segment {
  path: string;
  fd: number;
  openedAt: number;
  pending: number;
  sealed: boolean;
}

export interface PutJournal {
  /** Appends one entry (synchronously) and returns what to call once its write has settled; throws when the file cannot be written. */
  append(entry: unknown): () => void;
}

/** A journal writing segment files into `dir` (created if missing); one per writer. */
export function openPutJournal(dir: string, name: string): PutJournal {
  mkdirSync(dir, { recursive: true });
  // Unique per process, thread and writer: every endpoint group's bundle has its own writer.
  const prefix = `${name}-${process.pid}-${threadId}-${randomUUID().slice(0, 8)}`;
  const segments: Segment[] = [];
  let current: Segment | undefined;
  let sequence = 0;
  let sweeper: NodeJS.Timeout | undefined;

  // Oldest first, and never past one still kept: an entry can refer to entries before it
  // (a charge to the records it sums), so what replay finds of a writer has no hole.
  function sweep(): void {
    const now = Date.now();
    for (const s of segments) if (!s.sealed && now - s.openedAt >= SEGMENT_MS) s.sealed = true;
    while (segments.length > 0) {
      const s = segments[0]!;
      if (!s.sealed || s.pending > 0 || now - s.openedAt < KEEP_MS) break;
      closeSync(s.fd);
      try {
        unlinkSync(s.path);
      } catch {
        /* the folder went away */
      }
      segments.shift();
      if (current === s) current = undefined;
    }
    if (segments.length === 0 && sweeper) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
  }

  function segmentForNow(): Segment {
    if (current && !current.sealed && Date.now() - current.openedAt < SEGMENT_MS) return current;
    if (current) current.sealed = true;
    const path = join(dir, `${prefix}-${String(sequence++).padStart(6, '0')}.jsonl`);
    let fd: number;
    try {
      fd = openSync(path, 'a');
    } catch {
      // The folder was removed while the process ran: made again (a second failure throws).
      mkdirSync(dir, { recursive: true });
      fd = openSync(path, 'a');
    }
    current = { path, fd, openedAt: Date.now(), pending: 0, sealed: false };
    segments.push(current);
    sweeper ??= setInterval(sweep, SEGMENT_MS).unref();
    return current;
  }

  return {
    append(entry) {
      const segment = segmentForNow();
      writeSync(segment.fd, `${JSON.stringify(entry)}\n`);
      segment.pending++;
      let settled = false;
      return () => {
        if (settled) return;
        settled = true;
        segment.pending--;
      };
    },
  };
}

/**
 * Every entry of every segment file left in `dir` (by processes that died, or stopped with
 * segments still kept), oldest file first and in the order each writer appended them, given
 * to `apply` at once; then the files are deleted. A torn last line (the crash came during its
 * append, before the write it stood for was answered) is skipped. Call it before any writer
 * of this folder starts.
 */
export async function replayJournal(dir: string, apply: (entries: unknown[]) => Promise<void>): Promise<{ files: number; entries: number }> {
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((n) => n.endsWith('.jsonl'))
      .sort();
  } catch {
    return { files: 0, entries: 0 };
  }
  const paths = names.map((name) => join(dir, name));
  const parsed: unknown[] = [];
  for (const path of paths) {
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      if (!line) continue;
      try {
        parsed.push(JSON.parse(line));
      } catch {
        /* torn */
      }
    }
  }
  if (parsed.length > 0) await apply(parsed);
  for (const path of paths) unlinkSync(path);
  return { files: names.length, entries: parsed.length };
}
