import { othersInFlight } from '../shared/telemetry/invocations';

/**
 * Sharded counters: how one logical counter (a rate-limit bucket's window, a budget's
 * period, a spend counter's hour) is spread over several DynamoDB items, so that no item
 * takes more than its share of the writes (docs/usage.md, "Counters at scale").
 *
 * - Shard 0 is the key the counter always had; shard i > 0 adds `#s<i>` to the partition
 *   key. So a counter that is not sharded (one shard) is exactly the item written before
 *   sharding, and readers that sum shards count those older items as shard 0.
 * - A limit (requests, tokens, budget) is split into slices, one per shard, that add up to
 *   the limit: shard i admits while its own count is under its slice. A request tries its
 *   starting shard, then the others in order (wrapping around); the limit refuses only once every shard is
 *   at its slice, that is once the shards together reach the limit.
 * - A limit is sharded only when each slice would hold at least `minPerShard` (so a small
 *   limit stays one exact counter, as before): shards = clamp(floor(limit / minPerShard), 1, max).
 */

/** How many shards a limit gets: one below twice the minimum share, at most `maxShards`. */
export function shardCountFor(limit: number, minPerShard: number, maxShards: number): number {
  if (!(limit > 0) || !(minPerShard > 0)) return 1;
  return Math.max(1, Math.min(Math.floor(maxShards), Math.floor(limit / minPerShard)));
}

/**
 * Shard `shard`'s slice of `limit` over `shards` shards. Whole units (requests, nano-dollars):
 * the integer part split evenly, the remainder one each to the first shards, so the slices
 * add up to exactly the limit's whole part. Otherwise (tokens may be fractional): an even share.
 */
export function sliceOf(limit: number, shards: number, shard: number, wholeUnits: boolean): number {
  if (shards <= 1) return limit;
  if (!wholeUnits) return limit / shards;
  const whole = Math.floor(limit);
  const base = Math.floor(whole / shards);
  return base + (shard < whole - base * shards ? 1 : 0);
}

/** The partition key of a counter's shard: shard 0 is the unsharded key. */
export const shardPk = (pk: string, shard: number): string => (shard === 0 ? pk : `${pk}#s${shard}`);

/** This process's own shard among up to 2^16: where a busy process keeps its traffic, so its writes coalesce. */
const HOME = Math.floor(Math.random() * 65_536);

/**
 * Where a request starts among `shards`: at random when the process serves it alone (Lambda
 * on demand: the load spreads evenly over the shards, request by request), at the process's
 * own shard when others run beside it (Managed Instances, the local runtime), so that one
 * process's reservations and held increments share one item.
 */
export function startShard(shards: number): number {
  if (shards <= 1) return 0;
  return othersInFlight() ? HOME % shards : Math.floor(Math.random() * shards);
}

/** A uniformly random shard (spend counters: each write goes to one of them). */
export const randomShard = (shards: number): number => (shards <= 1 ? 0 : Math.floor(Math.random() * shards));

/** Past this many windows remembered, those that have ended are forgotten, then the oldest (forgetting costs a read, never a wrong answer). */
const REMEMBER_AT_MOST = 1_000;
const NONE_FULL: ReadonlyMap<number, number> = new Map();

/**
 * Shards a container has seen at their slice, per counter and window (a window's counts
 * only grow, so a shard seen full stays full until the window ends): later requests of the
 * container skip them without a round trip. With what each read said, for the headers of a
 * refusal. Only windows with a full shard take memory.
 */
export class FullShards {
  private readonly windows = new Map<string, { endsAt: number; seen: Map<number, number> }>();

  /** The shards seen full in the window `id` (a counter and its window). */
  of(id: string): ReadonlyMap<number, number> {
    return this.windows.get(id)?.seen ?? NONE_FULL;
  }

  /** Remember that `shard` of window `id` (ending at `endsAt`, epoch ms; Infinity: never) was seen holding `value`, at or past its slice. */
  markFull(id: string, endsAt: number, shard: number, value: number): void {
    const existing = this.windows.get(id);
    if (existing) {
      existing.seen.set(shard, value);
      return;
    }
    if (this.windows.size >= REMEMBER_AT_MOST) this.prune();
    this.windows.set(id, { endsAt, seen: new Map([[shard, value]]) });
  }

  private prune(): void {
    const now = Date.now();
    for (const [key, w] of this.windows) if (w.endsAt <= now) this.windows.delete(key);
    for (const key of this.windows.keys()) {
      if (this.windows.size < REMEMBER_AT_MOST) break;
      this.windows.delete(key);
    }
  }
}
