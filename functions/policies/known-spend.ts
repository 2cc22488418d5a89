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

/** What this container's charges sent to each counter and not answered yet add up to (count and nano-USD). */
const chargesInFlight = new Map<string, { count: number; nusd: number }>();

/**
 * Run `charge` (an increment of counter `id` by `nusd`) with the counter marked as having
 * that charge of this container in flight: until it is answered, what this container knew
 * of the counter may miss it, so admission counts it on top (./budget-check.ts).
 */
export async function whileCharging<T>(id: string, nusd: number, charge: () => Promise<T>): Promise<T> {
  const inFlight = chargesInFlight.get(id) ?? { count: 0, nusd: 0 };
  chargesInFlight.set(id, { count: inFlight.count + 1, nusd: inFlight.nusd + nusd });
  try {
    return await charge();
  } finally {
    const left = chargesInFlight.get(id)!;
    if (left.count > 1) chargesInFlight.set(id, { count: left.count - 1, nusd: left.nusd - nusd });
    else chargesInFlight.delete(id);
  }
}

/**
 * The spend last learned of counter `id`, if it was learned at or after `since`, plus this
 * container's charges to it still in flight: at least what the counter holds of every
 * charge this container made (a charge the learned spend already holds is counted twice,
 * which only errs towards a read).
 */
export function knownSpendSince(id: string, since: number): number | undefined {
  const entry = known.get(id);
  if (!entry || entry.at < since) return undefined;
  return entry.spentNusd + (chargesInFlight.get(id)?.nusd ?? 0);
}

/** Forget everything learned (tests). */
export function forgetKnownSpend(): void {
  known.clear();
  chargesInFlight.clear();
}
