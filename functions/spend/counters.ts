import { config } from '../shared/config';
import { HOLD_MS, othersInFlight, registerHolder } from '../shared/telemetry/invocations';
import { log } from '../shared/telemetry/logger';
import { addOnce } from '../shared/db/ops';
import type { TableName } from '../shared/tables';
import { randomShard } from '../policies/shards';
import type { RequestLogRecord } from './request-record';
import { addAmounts, amountsOf, COUNTER_ATTRIBUTES, countersOf, spendShardPk, zeroAmounts, type CounterKey, type SpendAmounts } from './dimensions';
import { DAY_SECONDS, HOUR_SECONDS, floorTo } from './periods';

/** At most this many UpdateItem calls of one flush in flight. */
const MAX_PARALLEL_UPDATES = 16;

export interface PendingIncrement {
  key: CounterKey;
  amounts: SpendAmounts;
  ttl: number;
}

interface Generation {
  items: Map<string, PendingIncrement>;
  done: Promise<void>;
  settle: (err?: unknown) => void;
  /** Some increments' requests did not wait for this write: its failure is logged here. */
  unawaited?: boolean;
}

function newGeneration(): Generation {
  let settle!: (err?: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    settle = (err) => (err === undefined ? resolve() : reject(err));
  });
  // A generation nobody awaits any more must not become an unhandled rejection.
  done.catch(() => {});
  return { items: new Map(), done, settle };
}

/**
 * One counter's summed increments, added once even if the client retries (`addOnce`), to one
 * of its shards picked at random per write: at 10,000 writes a second of one counter, each of
 * the 32 default shards takes about 313.
 */
async function addToCounter(table: TableName, item: PendingIncrement): Promise<void> {
  const add: Record<string, number> = {};
  for (const attribute of COUNTER_ATTRIBUTES) if (item.amounts[attribute] !== 0) add[attribute] = item.amounts[attribute];
  add.requests ??= 0;
  const key = { pk: spendShardPk(item.key.pk, randomShard(config().counterShards)), sk: item.key.sk };
  await addOnce(table, key, { set: { ttl: item.ttl }, add });
}

/**
 * Atomic counters, shared by concurrent requests of one process: increments of the same
 * counter are summed in memory and written by one UpdateItem (`ADD`), so a busy process makes
 * one write per counter per flush, not one per request.
 *
 * - A request alone in its process (Lambda on demand: one at a time) awaits the flush that
 *   carries its increments, started in the same event-loop turn (or after the flush in
 *   flight), so nothing is left when Lambda freezes the container.
 * - A request with others running beside it (Lambda Managed Instances, the local runtime)
 *   leaves its increments to the process: they are written within HOLD_MS, or by the last
 *   invocation to end, which waits for them (../shared/telemetry/invocations.ts). At one
 *   write per counter per second, a counter costs the same whether it counts 1 or 100
 *   requests a second.
 */
export function counterWriter(
  table: TableName,
  /** One counter's summed increments, written (injected by tests). */
  write: (table: TableName, item: PendingIncrement) => Promise<void> = addToCounter,
): (keys: readonly CounterKey[], amounts: SpendAmounts, ttl: number) => Promise<void> {
  let next = newGeneration();
  let current: Generation | undefined;
  let scheduled = false;
  let holding: NodeJS.Timeout | undefined;

  async function flush(generation: Generation): Promise<void> {
    const items = [...generation.items.values()];
    let failure: unknown;
    let i = 0;
    const lane = async () => {
      while (i < items.length) {
        const item = items[i++]!;
        await write(table, item).catch((err: unknown) => {
          failure ??= err;
        });
      }
    };
    await Promise.all(Array.from({ length: Math.min(MAX_PARALLEL_UPDATES, items.length) }, lane));
    if (failure !== undefined && generation.unawaited) log.error('spend counters not written', { table, counters: items.length, error: String(failure) });
    generation.settle(failure);
  }

  function start(): void {
    if (current || next.items.size === 0) return;
    clearTimeout(holding);
    holding = undefined;
    const generation = next;
    next = newGeneration();
    current = generation;
    void flush(generation).finally(() => {
      current = undefined;
      start();
    });
  }

  registerHolder(async () => {
    const pending = [current?.done, next.items.size ? next.done : undefined];
    start();
    await Promise.allSettled(pending);
  });

  return (keys, amounts, ttl) => {
    const generation = next;
    for (const key of keys) {
      const id = `${key.pk}\u0000${key.sk}`;
      const pending = generation.items.get(id);
      if (pending) {
        addAmounts(pending.amounts, amounts);
        pending.ttl = Math.max(pending.ttl, ttl);
      } else generation.items.set(id, { key, amounts: addAmounts(zeroAmounts(), amounts), ttl });
    }
    if (othersInFlight()) {
      generation.unawaited = true;
      holding ??= setTimeout(start, HOLD_MS).unref();
      return Promise.resolve();
    }
    if (!scheduled) {
      // Increments of the same event-loop turn join one flush.
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        start();
      });
    }
    return generation.done;
  };
}

// Pure: bundles that import this module without recording spend (the admin reports) drop the writer.
const addToCounters = /* @__PURE__ */ counterWriter('usage');

/** When a counter of the hour starting at `hourStart` expires: SPEND_RETENTION_DAYS after the hour ends. */
export const counterTtl = (hourStart: number, retentionDays: number) => hourStart + HOUR_SECONDS + retentionDays * DAY_SECONDS;

/**
 * Add one request to the spend counters of its hour: the workspace total, its key, provider,
 * model and each counted metadata key (functions/spend/dimensions.ts). Called by the request
 * log's after-response task once the record is stored, so the counters count exactly the
 * stored records; resolves when the increments are written.
 */
export function recordSpend(record: RequestLogRecord): Promise<void> {
  const ttl = counterTtl(floorTo(record.created_at, HOUR_SECONDS), config().spendRetentionDays);
  return addToCounters(countersOf(record), amountsOf(record), ttl);
}
