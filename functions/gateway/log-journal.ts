import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { config } from '../shared/config';
import type { Key } from '../shared/db/ops';
import type { PutJournal } from '../shared/db/put-journal';
import { loadOnce } from '../shared/load-once';
import { log } from '../shared/telemetry/logger';
import type { BudgetCharge, ChargeMarker } from '../policies/budget-spend';

/**
 * The write-ahead journal of the request log (the local runtime with a data folder): each
 * record is journaled before its write, and each group's summed budget charge before it is
 * sent, naming the records it sums and the marker it leaves in every counter it adds to
 * (functions/shared/db/ops.ts `addInOrder`). After a `kill -9`, replay
 * (./request-log-replay.ts) then knows of every journaled charge whether it was applied,
 * and applies it if not: a stored record is charged exactly once, whichever of its two
 * calls the crash cut.
 *
 * A writer (this module, once per bundle and thread) owns one marker attribute per write
 * slot of its batched writer, `cw_<thread>_<writer>_<slot>`, and one for charges replay
 * makes of records that were never sent, `..._u`. Its `seq`s sort upwards, across restarts
 * too (they start with the writer's start time, kept in the folder so that a clock gone
 * back cannot make it smaller), so the names are reused and a counter carries a bounded
 * number of them. Should a live charge still be refused by a marker its writer never set
 * (the folder was lost), it is charged without it (budget-spend.ts).
 */

/** What the journal keeps of a record's write: the item, its budget charge, and that charge's seq should replay have to send it. */
export interface JournaledRecord {
  /** The stored item of the record (./request-log.ts `requestLogItem`). */
  item: Key & Record<string, unknown>;
  charge?: Omit<BudgetCharge, 'context'>;
  /** The writer's marker base (absent in entries of journals from before markers). */
  writer?: string;
  seq?: string;
}

/** A group's summed charge, journaled as it is sent: the records (their `sk`) it sums, and its marker. */
export interface JournaledCharge {
  charged: { records: string[]; marker: { attr: string; seq: string } };
}

export type LogJournalEntry = JournaledRecord | JournaledCharge;

/** The marker attribute a writer's replay uses for charges of records never sent. */
export const unsentMarkerAttr = (writer: string): string => `${writer}_u`;

/** The writers of this thread (one per bundle that logs), so that each has its own attributes. */
const WRITERS = Symbol.for('gateway.log-journal.writers');
const writerIndex = (): number => {
  const g = globalThis as { [WRITERS]?: number };
  g[WRITERS] = (g[WRITERS] ?? 0) + 1;
  return g[WRITERS] - 1;
};

/**
 * When a writer of this name starts, in ms: now, or just after the last start of a writer of
 * the same name on this folder if the clock has gone back since (kept in `<writer>.start`),
 * so its seqs stay above every one an earlier process left in a counter.
 */
export function writerStart(dir: string, writer: string, now = Date.now()): number {
  const file = join(dir, `${writer}.start`);
  let last = 0;
  try {
    last = Number(readFileSync(file, 'utf8')) || 0;
  } catch {
    /* the first writer of this name */
  }
  const start = Math.max(now, last + 1);
  try {
    writeFileSync(file, String(start));
  } catch {
    /* an unwritable folder: its appends report it */
  }
  return start;
}

export class LogJournal {
  private readonly writer = `cw_${threadId}_${writerIndex()}`;
  private readonly start: string;
  private sequence = 0;

  /** `dir`: the journal's folder, where the writer's start is kept (without it: the clock alone). */
  constructor(
    private readonly journal: PutJournal,
    dir?: string,
  ) {
    this.start = String(dir ? writerStart(dir, this.writer) : Date.now()).padStart(15, '0');
  }

  private nextSeq(): string {
    return `${this.start}${String(this.sequence++).padStart(12, '0')}`;
  }

  /** Journals a record's write; returns what settles the entry, or undefined if it could not be journaled. */
  record(item: JournaledRecord['item'], charge: BudgetCharge | undefined): (() => void) | undefined {
    const entry: JournaledRecord = charge
      ? { item, charge: { grant: charge.grant, costUsd: charge.costUsd, workspaceId: charge.workspaceId }, writer: this.writer, seq: this.nextSeq() }
      : { item };
    return this.append(entry);
  }

  /**
   * Journals a group's charge about to be sent under write slot `slot`; returns its marker
   * and what settles the entry, or undefined if it could not be journaled (the charge is then
   * sent without a marker, as where there is no journal).
   */
  charge(records: string[], slot: number): { marker: ChargeMarker; settle: () => void } | undefined {
    const marker = { attr: `${this.writer}_${slot}`, seq: this.nextSeq() };
    const settle = this.append({ charged: { records, marker } } satisfies JournaledCharge);
    return settle && { marker, settle };
  }

  private lastFailureLogged = 0;

  /**
   * A journal that cannot be written (a full disk, its folder made a file) costs only what it
   * protects against: the write goes on without it. Reported once a minute at most.
   */
  private append(entry: LogJournalEntry): (() => void) | undefined {
    try {
      return this.journal.append(entry);
    } catch (err) {
      if (Date.now() - this.lastFailureLogged >= FAILURE_LOG_INTERVAL_MS) {
        this.lastFailureLogged = Date.now();
        log.error('request-log journal not written: records and charges go on without it', { error: String(err) });
      }
      return undefined;
    }
  }
}

const FAILURE_LOG_INTERVAL_MS = 60_000;

let opened: LogJournal | null | undefined;

/** The journal, opened on first use; null where there is none (Lambda), which then never loads its code. */
export const openLogJournal = /* @__PURE__ */ loadOnce(async () => {
  const dir = config().requestLogJournalDir;
  opened = dir ? new LogJournal((await import('../shared/db/put-journal')).openPutJournal(dir, 'logs'), dir) : null;
  return opened;
});

/** The journal if it has been opened (every record is journaled, opening it, before its write is queued). */
export const openedLogJournal = (): LogJournal | null | undefined => opened;
