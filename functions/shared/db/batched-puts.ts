import type { TableName } from '../tables';
import { BATCH_WRITE_MAX, batchWrite, putItem, type Key } from './ops';

type Item = Key & Record<string, unknown>;

interface Pending<T> {
  item: Item;
  /** What the caller gave with its item for `onSend`. */
  tag: T | undefined;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** At most this many BatchWriteItem calls of one writer in flight. */
const MAX_IN_FLIGHT = 8;

export interface BatchedPutsOptions<T> {
  /**
   * How long the first item of a group waits for others before the group is written (read
   * per item; 0 = at once). A full group (25) never waits.
   */
  waitMs?: () => number;
  /**
   * Writes that belong with the items, started in the same turn as the group's
   * BatchWriteItem (given the tags of the group's items that have one), so they are sent
   * together: a crash takes both or neither (but for the moment between the calls). Each
   * caller's promise also waits for them; their failure does not fail the items (report
   * it in `onSend`).
   *
   * `slot` (0 to MAX_IN_FLIGHT - 1) is free for this group alone until its writes and these
   * have settled: what a group sends under one slot reaches DynamoDB after what the slot's
   * group before sent.
   */
  onSend?: (tags: T[], slot: number) => Promise<void>;
}

/**
 * Puts of one table, grouped: every caller awaits its own item's write, and items that
 * arrive while a write is in flight go together in the next BatchWriteItem (up to 25).
 * One item alone still costs one call, so a container that serves one request at a time
 * (Lambda) writes exactly as before, while a busy process makes one call per group.
 *
 * With `waitMs`, a process that serves many requests (the local runtime, a container)
 * also groups items that arrive one after another: fewer calls, and a request's write no
 * longer lands in the middle of the next request. Lambda must not wait: its container has
 * nothing to group with, and the invocation would only last longer.
 *
 * A batch DynamoDB rejects as a whole (an oversized item fails validation) is retried
 * item by item, so one bad item cannot take its neighbours down with it.
 */
export function batchedPuts<T = never>(table: TableName, options: BatchedPutsOptions<T> = {}): (item: Item, tag?: T) => Promise<void> {
  const queue: Pending<T>[] = [];
  let inFlight = 0;
  let scheduled = false;
  let waiting: NodeJS.Timeout | undefined;
  /** The queued items have had their wait: they go as soon as a write slot is free. */
  let overdue = false;

  /** Which of the MAX_IN_FLIGHT slots a group in flight holds. */
  const slotsTaken: boolean[] = [];

  async function send(group: Pending<T>[]): Promise<void> {
    let slot = slotsTaken.indexOf(false);
    if (slot === -1) slot = slotsTaken.length;
    slotsTaken[slot] = true;
    const tags = group.flatMap((p) => (p.tag === undefined ? [] : [p.tag]));
    let alongside: Promise<void> | undefined;
    try {
      alongside = tags.length && options.onSend ? options.onSend(tags, slot) : undefined;
    } catch (err) {
      // Thrown before it returned a promise: the group is written all the same.
      alongside = Promise.reject(err);
    }
    // A caller learns its item is stored once what goes along is settled too (its failure
    // is onSend's to report: the item is stored all the same).
    const settled = alongside?.catch(() => undefined);
    if (settled) {
      for (const p of group) {
        const { resolve } = p;
        p.resolve = () => void settled.then(resolve);
      }
    }
    try {
      await writeGroup(group);
    } finally {
      await settled;
      slotsTaken[slot] = false;
    }
  }

  async function writeGroup(group: Pending<T>[]): Promise<void> {
    try {
      await batchWrite(
        table,
        group.map((p) => ({ PutRequest: { Item: p.item } })),
      );
      for (const p of group) p.resolve();
    } catch (err) {
      if (group.length === 1) {
        group[0]!.reject(err);
        return;
      }
      await Promise.all(group.map((p) => putItem(table, p.item).then(p.resolve, p.reject)));
    }
  }

  /**
   * Without a wait, a new group starts when nothing is in flight, or when a full one is
   * waiting: items that arrive during a write go together in the next. Items that have
   * waited go at once (the wait did the grouping), or as soon as a write slot frees: an
   * item is not held longer because another write is slow, which is what a crash can lose.
   */
  function pump(): void {
    if (waiting) return;
    while (queue.length > 0 && inFlight < MAX_IN_FLIGHT && (overdue || inFlight === 0 || queue.length >= BATCH_WRITE_MAX)) {
      inFlight++;
      void send(queue.splice(0, BATCH_WRITE_MAX)).finally(() => {
        inFlight--;
        pump();
      });
    }
    if (queue.length === 0) overdue = false;
  }

  function flushWaiting(): void {
    clearTimeout(waiting);
    waiting = undefined;
    overdue = true;
    pump();
  }

  return (item, tag) =>
    new Promise<void>((resolve, reject) => {
      queue.push({ item, tag, resolve, reject });
      const waitMs = options.waitMs?.() ?? 0;
      if (waitMs > 0) {
        if (queue.length >= BATCH_WRITE_MAX) flushWaiting();
        else waiting ??= setTimeout(flushWaiting, waitMs);
        return;
      }
      if (scheduled) return;
      // Items queued in the same event-loop turn join one group.
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        pump();
      });
    });
}
