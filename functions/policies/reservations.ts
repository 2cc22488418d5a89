import { config } from '../shared/config';
import { updateItem } from '../shared/db/ops';
import { log } from '../shared/telemetry/logger';

/**
 * Request counters of the rate limiter, reserved from DynamoDB in blocks so that a busy
 * container does not make a round trip per request, without ever admitting more than
 * the limit.
 *
 * The counter of a bucket and window lives in the `usage` table. A container reserves k
 * units with ONE conditional increment (`ADD count k` if `count <= limit - k`) and hands
 * them to requests from memory. Within a window the counter only grows, so once a
 * reservation of a single unit fails (or the counter this container last saw is at the
 * limit) the window is full and requests are refused without a round trip.
 *
 * How big a reservation is:
 * - every request waiting for this bucket at that moment gets a unit (requests arriving in
 *   the same event-loop turn are collected first), and
 * - a few more ahead of demand ("speculative"): the requests this container saw for the
 *   bucket in the last 100 ms, scaled to `RATE_LIMIT_RESERVE_AHEAD_MS` (0 turns this off),
 *   and at least two while its requests come less than 2 s apart, but never more than
 *   1/16 of what the counter says is left, and none once fewer than 16 remain. The next
 *   block is reserved in the background when half of the speculative part is used, so a
 *   steady stream of requests, dense or sparse, does not wait for DynamoDB.
 * - That background reservation starts when the request that used the unit calls
 *   `refillAhead` (once its upstream has answered), not while the request waits for its
 *   provider's first byte: its signing and sending would delay that byte. Two units in hand
 *   let the next request of a caller whose requests are shorter than a DynamoDB round trip
 *   find one while the refill is still on its way.
 *
 * What that guarantees: never more than `limit` admitted per window across all containers
 * (every unit handed out was reserved by a conditional write). Speculative units a
 * container has not used when its traffic stops stay unused until the window ends: a
 * window can under-admit by at most those (per container, at most 1/16 of what was left
 * when it reserved them and about `RATE_LIMIT_RESERVE_AHEAD_MS` of its own traffic, or
 * three units). Near the limit, and for a first request after 2 s without one, every
 * reservation is exactly the waiting requests.
 */

export interface Admission {
  admitted: boolean;
  /** The window's count including this request as this container sees it (the limit when refused). */
  count: number;
}

export interface BucketWindow {
  /** Partition key of the bucket. */
  pk: string;
  /** Sort key of the window. */
  sk: string;
  /** Epoch seconds at which DynamoDB may expire the counter. */
  ttl: number;
  /** Epoch ms at which the window ends. */
  endsAt: number;
}

const DEMAND_SLOT_MS = 100;
/**
 * A bucket whose previous request came within this long keeps UNITS_IN_HAND even when its
 * traffic is too sparse for the 100 ms meter: steady but sparse traffic (a caller sending
 * one request after another, a Lambda container serving one at a time) reserves its next
 * units in the background, not before the provider.
 */
const SPARE_WITHIN_MS = 2_000;
const UNITS_IN_HAND = 2;
/** A speculative reservation takes at most this share of what is left. */
const SPECULATIVE_SHARE = 16;
const SPECULATIVE_MAX = 1_000;
/** Past this many buckets in memory, those of ended windows are dropped. */
const PRUNE_ABOVE = 1_000;

interface Waiter {
  resolve: (a: Admission) => void;
  reject: (err: unknown) => void;
}

interface Bucket {
  window: BucketWindow;
  limit: number;
  /** Units reserved in DynamoDB and not yet handed out. */
  available: number;
  /** The counter's value after this container's latest reservation. */
  counter: number;
  /** A reservation of one unit failed: the window is full. */
  full: boolean;
  waiters: Waiter[];
  reserving: boolean;
  // Demand meter (real time, whatever `now` the caller passes).
  slotStart: number;
  slotCount: number;
  lastSlotCount: number;
  /** Whether the request before the latest one (of the bucket, over all its shards) came within SPARE_WITHIN_MS. */
  steady: boolean;
}

/** When each bucket's latest request came, by the caller's demand key (one per bucket, whichever shard counted it); least recent forgotten first. */
const lastRequestAt = new Map<string, number>();
const REMEMBER_REQUEST_TIMES = 10_000;

function steadyDemand(demandKey: string, now: number): boolean {
  const last = lastRequestAt.get(demandKey);
  lastRequestAt.delete(demandKey);
  lastRequestAt.set(demandKey, now);
  if (lastRequestAt.size > REMEMBER_REQUEST_TIMES) lastRequestAt.delete(lastRequestAt.keys().next().value!);
  return last !== undefined && now - last <= SPARE_WITHIN_MS;
}

const buckets = new Map<string, Bucket>();

function bucketFor(window: BucketWindow, limit: number): Bucket {
  const existing = buckets.get(window.pk);
  if (existing && existing.window.sk === window.sk) {
    existing.limit = limit;
    return existing;
  }
  if (buckets.size >= PRUNE_ABOVE) pruneEnded();
  const bucket: Bucket = {
    window,
    limit,
    available: 0,
    counter: 0,
    full: false,
    waiters: [],
    reserving: false,
    // The demand meter carries over from the previous window of the same bucket.
    slotStart: existing?.slotStart ?? performance.now(),
    slotCount: existing?.slotCount ?? 0,
    lastSlotCount: existing?.lastSlotCount ?? 0,
    steady: existing?.steady ?? false,
  };
  buckets.set(window.pk, bucket);
  return bucket;
}

function pruneEnded(): void {
  const now = Date.now();
  for (const [pk, b] of buckets) if (b.window.endsAt <= now && !b.reserving && b.waiters.length === 0) buckets.delete(pk);
}

function noteDemand(b: Bucket, demandKey: string): void {
  const now = performance.now();
  const elapsed = now - b.slotStart;
  if (elapsed >= DEMAND_SLOT_MS) {
    b.lastSlotCount = elapsed < 2 * DEMAND_SLOT_MS ? b.slotCount : 0;
    b.slotStart = now;
    b.slotCount = 0;
  }
  b.slotCount++;
  b.steady = steadyDemand(demandKey, now);
}

function speculativeUnits(b: Bucket, waiting: number): number {
  const aheadMs = config().rateLimitReserveAheadMs;
  if (aheadMs === 0) return 0;
  const demand = Math.max(Math.floor((b.lastSlotCount * aheadMs) / DEMAND_SLOT_MS), b.steady ? UNITS_IN_HAND : 0);
  const left = b.limit - b.counter - waiting;
  return Math.max(0, Math.min(demand, Math.floor(left / SPECULATIVE_SHARE), SPECULATIVE_MAX));
}

/** One conditional increment of k; the counter after it, or undefined when it would pass the limit. */
async function reserve(b: Bucket, k: number): Promise<number | undefined> {
  const updated = await updateItem<{ count: number }>(
    'usage',
    { pk: b.window.pk, sk: b.window.sk },
    {
      set: { ttl: b.window.ttl },
      add: { count: k },
      condition: 'attribute_not_exists(#count) OR #count <= :max',
      conditionValues: { ':max': b.limit - k },
    },
  );
  return updated ? Number(updated.count) : undefined;
}

const isFull = (b: Bucket) => b.full || b.counter >= b.limit;

function handOut(b: Bucket): Admission {
  b.available--;
  return { admitted: true, count: b.counter - b.available };
}

function serveWaiters(b: Bucket): void {
  while (b.available > 0 && b.waiters.length) b.waiters.shift()!.resolve(handOut(b));
  if (b.available === 0 && isFull(b)) for (const w of b.waiters.splice(0)) w.resolve({ admitted: false, count: b.limit });
}

/** Reserve for the waiting requests (and ahead of demand) until none is left waiting. */
async function pump(b: Bucket, prefetch: boolean): Promise<void> {
  b.reserving = true;
  try {
    // Let the requests that arrived in this event-loop turn join the first reservation.
    await new Promise((resolve) => setImmediate(resolve));
    while (!isFull(b) && (b.waiters.length > 0 || prefetch)) {
      const waiting = b.waiters.length;
      let k = Math.min(waiting + speculativeUnits(b, waiting), b.limit - b.counter);
      prefetch = false;
      if (k <= 0) break;
      let counter = await reserve(b, k);
      if (counter === undefined && k > 1 && b.waiters.length > 0) {
        // Another container took part of what was left: reserve one at a time from here.
        k = 1;
        counter = await reserve(b, k);
      }
      if (counter === undefined) {
        if (k === 1) b.full = true;
      } else {
        b.counter = Math.max(b.counter, counter);
        b.available += k;
      }
      serveWaiters(b);
    }
    serveWaiters(b);
  } catch (err) {
    const failed = b.waiters.splice(0);
    for (const w of failed) w.reject(err);
    // A failed reservation ahead of demand has nobody to tell; the next request retries.
    if (failed.length === 0) log.warn('rate limit: reservation failed', { error: (err as Error).message });
  } finally {
    b.reserving = false;
  }
}

/**
 * Admit one request to a requests bucket: from this container's reserved units when it
 * has any, else with the next reservation. Storage errors reject. `demandKey` names the
 * bucket over all its shards (default: this shard's key), for the steady-demand rule.
 */
export function admitRequest(window: BucketWindow, limit: number, demandKey = window.pk): Promise<Admission> {
  const b = bucketFor(window, limit);
  noteDemand(b, demandKey);
  if (b.available > 0) return Promise.resolve(handOut(b));
  if (isFull(b)) return Promise.resolve({ admitted: false, count: limit });
  return new Promise<Admission>((resolve, reject) => {
    b.waiters.push({ resolve, reject });
    if (!b.reserving) void pump(b, false);
  });
}

/**
 * Reserve the bucket's next units in the background when half of those held ahead are
 * used: called by a request admitted on `window` once its upstream has answered (or it
 * ended without one), so the round trip is not made while it waits for its first byte.
 */
export function refillAhead(window: BucketWindow): void {
  const b = buckets.get(window.pk);
  if (!b || b.window.sk !== window.sk || b.reserving || isFull(b)) return;
  if (b.available * 2 <= speculativeUnits(b, 0)) void pump(b, true);
}

/** Whether this container holds a reserved unit of the bucket `pk`'s window `sk` (a request would be admitted without a round trip). */
export function hasUnitInHand(pk: string, sk: string): boolean {
  const b = buckets.get(pk);
  return b !== undefined && b.window.sk === sk && b.available > 0;
}

/**
 * Give back a unit handed out by `admitRequest` that was not used (another policy refused
 * the request): the next request of this container gets it. The counter is not lowered,
 * so a concurrent reader errs on refusing, never on admitting.
 */
export function returnUnit(window: BucketWindow): void {
  const b = buckets.get(window.pk);
  if (!b || b.window.sk !== window.sk) return;
  b.available++;
  serveWaiters(b);
}
