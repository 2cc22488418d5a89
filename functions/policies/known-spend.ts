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

/** The spend last learned of counter `id`, if it was learned at or after `since`. */
export function knownSpendSince(id: string, since: number): number | undefined {
  const entry = known.get(id);
  return entry && entry.at >= since ? entry.spentNusd : undefined;
}

/** Forget everything learned (tests). */
export function forgetKnownSpend(): void {
  known.clear();
}
