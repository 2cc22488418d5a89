import type { TableName } from '../tables';
import { BATCH_WRITE_MAX, batchWrite, putItem, type Key } from './ops';

type Item = Key & Record<string, unknown>;

interface Pending {
  item: Item;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** At most this many BatchWriteItem calls of one writer in flight. */
const MAX_IN_FLIGHT = 4;

export interface BatchedPutsOptions {
  /**
   * How long the first item of a group waits for others before the group is written (read
   * per item; 0 = at once). A full group (25) never waits.
   */
  waitMs?: () => number;
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
export function batchedPuts(table: TableName, options: BatchedPutsOptions = {}): (item: Item) => Promise<void> {
  const queue: Pending[] = [];
  let inFlight = 0;
  let scheduled = false;
  let waiting: NodeJS.Timeout | undefined;

  async function send(group: Pending[]): Promise<void> {
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

  function pump(): void {
    if (waiting) return;
    // A new group starts when nothing is in flight, or when a full one is waiting.
    while (queue.length > 0 && inFlight < MAX_IN_FLIGHT && (inFlight === 0 || queue.length >= BATCH_WRITE_MAX)) {
      inFlight++;
      void send(queue.splice(0, BATCH_WRITE_MAX)).finally(() => {
        inFlight--;
        pump();
      });
    }
  }

  function flushWaiting(): void {
    clearTimeout(waiting);
    waiting = undefined;
    pump();
  }

  return (item) =>
    new Promise<void>((resolve, reject) => {
      queue.push({ item, resolve, reject });
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
