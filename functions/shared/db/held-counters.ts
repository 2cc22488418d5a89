import { HOLD_MS, othersInFlight, registerHolder } from '../telemetry/invocations';
import { log } from '../telemetry/logger';

/** At most this many UpdateItem calls of one flush in flight. */
const MAX_PARALLEL_UPDATES = 16;

/** Named numbers a counter item adds (`ADD`): requests, tokens, nano-dollars. */
export type Amounts = Record<string, number>;

export interface PendingIncrement<A extends Amounts = Amounts> {
  key: { pk: string; sk: string };
  amounts: A;
  ttl: number;
}

interface Generation<A extends Amounts> {
  items: Map<string, PendingIncrement<A>>;
  done: Promise<void>;
  settle: (err?: unknown) => void;
  /** Some increments' requests did not wait for this write: its failure is logged here. */
  unawaited?: boolean;
}

function newGeneration<A extends Amounts>(): Generation<A> {
  let settle!: (err?: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    settle = (err) => (err === undefined ? resolve() : reject(err));
  });
  // A generation nobody awaits any more must not become an unhandled rejection.
  done.catch(() => {});
  return { items: new Map(), done, settle };
}

function addInto<A extends Amounts>(into: A, more: A): void {
  const sums = into as Amounts;
  for (const name of Object.keys(more)) sums[name] = (sums[name] ?? 0) + more[name]!;
}

/**
 * Atomic counters shared by concurrent requests of one process (spend counters, tokens
 * policies' usage): increments of the same counter are summed in memory and written by one
 * call of `write` (an UpdateItem `ADD`), so a busy process makes one write per counter per
 * flush, not one per request.
 *
 * - A request alone in its process (Lambda on demand: one at a time) awaits the flush that
 *   carries its increments, started in the same event-loop turn (or after the flush in
 *   flight), so nothing is left when Lambda freezes the container.
 * - A request with others running beside it (Lambda Managed Instances, the local runtime)
 *   leaves its increments to the process: they are written within HOLD_MS, or by the last
 *   invocation to end, which waits for them (../telemetry/invocations.ts). At one write per
 *   counter per second, a counter costs the same whether it counts 1 or 100 requests a second.
 *
 * `what` names the counters in the error logged when held increments fail to be written.
 */
export function heldCounterWriter<A extends Amounts>(
  what: string,
  write: (item: PendingIncrement<A>) => Promise<void>,
): (keys: ReadonlyArray<{ pk: string; sk: string }>, amounts: A, ttl: number) => Promise<void> {
  let next = newGeneration<A>();
  let current: Generation<A> | undefined;
  let scheduled = false;
  let holding: NodeJS.Timeout | undefined;

  async function flush(generation: Generation<A>): Promise<void> {
    const items = [...generation.items.values()];
    let failure: unknown;
    let i = 0;
    const lane = async () => {
      while (i < items.length) {
        const item = items[i++]!;
        await write(item).catch((err: unknown) => {
          failure ??= err;
        });
      }
    };
    await Promise.all(Array.from({ length: Math.min(MAX_PARALLEL_UPDATES, items.length) }, lane));
    if (failure !== undefined && generation.unawaited) log.error(`${what} not written`, { counters: items.length, error: String(failure) });
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
        addInto(pending.amounts, amounts);
        pending.ttl = Math.max(pending.ttl, ttl);
      } else generation.items.set(id, { key, amounts: { ...amounts }, ttl });
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
