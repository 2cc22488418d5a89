/**
 * What this container last learned of each admission counter (one shard of a budget's
 * period, or of a tokens policy's window): from its own strongly consistent read, or from
 * the total its own increment returned. Admission (./budget-check.ts, ./limiter.ts) uses a
 * fresh one instead of a read while it is far from the shard's slice (`BUDGET_READ_AHEAD_MS`,
 * `TOKENS_READ_AHEAD_MS`; the bound is in docs/usage.md, "Budgets" and "Rate limits").
 *
 * A counter only grows within its period, so of two answers the larger is the later one: an
 * entry keeps the largest value seen and the latest time one was learned, which together
 * still mean "every increment made before `at` is in `value`" (`at` is when the read or
 * increment was sent, the earliest moment its answer can describe).
 */

interface Known {
  value: number;
  at: number;
}

/** Counters remembered per container; beyond it the least recently learned go first. */
const MAX_ENTRIES = 10_000;
const known = new Map<string, Known>();

/** Remember that the counter `id` held at least `value` once the call sent at `at` was answered. */
export function learnCount(id: string, value: number, at: number): void {
  const before = known.get(id);
  const next = before ? { value: Math.max(before.value, value), at: Math.max(before.at, at) } : { value, at };
  known.delete(id);
  known.set(id, next);
  if (known.size > MAX_ENTRIES) known.delete(known.keys().next().value!);
}

/** What this container has added to each counter and not had answered yet (held or sent). */
const inFlight = new Map<string, number>();

/**
 * Mark `amount` of this container's as on its way to counter `id` (a negative amount: it has
 * been answered, or has failed): until it is answered, what this container knew of the counter
 * may miss it, so admission counts it on top.
 */
export function addInFlight(id: string, amount: number): void {
  const left = (inFlight.get(id) ?? 0) + amount;
  if (left > 0) inFlight.set(id, left);
  else inFlight.delete(id);
}

/** Run `add` (an increment of counter `id` by `amount`) with that amount counted in flight until it settles. */
export async function whileAdding<T>(id: string, amount: number, add: () => Promise<T>): Promise<T> {
  addInFlight(id, amount);
  try {
    return await add();
  } finally {
    addInFlight(id, -amount);
  }
}

/**
 * The value last learned of counter `id`, if it was learned at or after `since`, plus this
 * container's increments to it still in flight: at least what the counter holds of every
 * increment this container made (one the learned value already holds is counted twice,
 * which only errs towards a read).
 */
export function knownCountSince(id: string, since: number): number | undefined {
  const entry = known.get(id);
  if (!entry || entry.at < since) return undefined;
  return entry.value + (inFlight.get(id) ?? 0);
}

/**
 * Read-ahead's rule: the value this container learned of the counter within `readAheadMs`
 * (its own increments in flight on top), when that is under half of `slice`, so admission
 * needs no read. Undefined (read it) near the slice, or when nothing fresh is known.
 */
export function knownFarFromSlice(id: string, slice: number, now: number, readAheadMs: number): number | undefined {
  const known = knownCountSince(id, now - readAheadMs);
  return known !== undefined && known * 2 < slice ? known : undefined;
}

/** A counter item's id in this memory. */
export const counterIdOf = (key: { pk: string; sk: string }): string => `${key.pk}\u0000${key.sk}`;

/** Forget everything learned (tests). */
export function forgetKnownCounters(): void {
  known.clear();
  inFlight.clear();
}
