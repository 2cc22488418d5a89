/**
 * What this container last learned of each budget counter's spend (one shard of one
 * budget period): from its own strongly consistent read, or from the total its own
 * charge's increment returned. Admission (./budget-check.ts) uses a fresh one instead of a
 * read while it is far from the shard's slice (`BUDGET_READ_AHEAD_MS`; the bound is in
 * docs/usage.md, "Budgets").
 *
 * A period's spend only grows, so of two answers the larger is the later one: an entry keeps
 * the largest spend seen and the latest time one was learned, which together still mean
 * "every charge made before `at` is in `spentNusd`" (`at` is when the read or increment was
 * sent, the earliest moment its answer can describe).
 */

interface Known {
  spentNusd: number;
  at: number;
}

/** Budget counters remembered per container; beyond it the least recently learned go first. */
const MAX_ENTRIES = 10_000;
const known = new Map<string, Known>();

/** Remember that the counter `id` held at least `spentNusd` once the call sent at `at` was answered. */
export function learnSpend(id: string, spentNusd: number, at: number): void {
  const before = known.get(id);
  const next = before ? { spentNusd: Math.max(before.spentNusd, spentNusd), at: Math.max(before.at, at) } : { spentNusd, at };
  known.delete(id);
  known.set(id, next);
  if (known.size > MAX_ENTRIES) known.delete(known.keys().next().value!);
}

/** Charges of this container sent to each counter and not answered yet. */
const chargesInFlight = new Map<string, number>();

/**
 * Run `charge` (an increment of counter `id`) with the counter marked as having a charge of
 * this container in flight: until it is answered, what this container knew of the counter
 * misses that charge, so admission reads the counter instead.
 */
export async function whileCharging<T>(id: string, charge: () => Promise<T>): Promise<T> {
  chargesInFlight.set(id, (chargesInFlight.get(id) ?? 0) + 1);
  try {
    return await charge();
  } finally {
    const left = chargesInFlight.get(id)! - 1;
    if (left > 0) chargesInFlight.set(id, left);
    else chargesInFlight.delete(id);
  }
}

/** The spend last learned of counter `id`, if it was learned at or after `since` and none of this container's charges to it is in flight. */
export function knownSpendSince(id: string, since: number): number | undefined {
  if (chargesInFlight.has(id)) return undefined;
  const entry = known.get(id);
  return entry && entry.at >= since ? entry.spentNusd : undefined;
}

/** Forget everything learned (tests). */
export function forgetKnownSpend(): void {
  known.clear();
  chargesInFlight.clear();
}
