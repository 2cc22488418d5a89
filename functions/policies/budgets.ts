import { config } from '../shared/config';
import { TtlCache } from '../shared/stores/ttl-cache';
import type { ActiveBudget, BudgetGrant, BudgetPolicy } from './budget-model';
import { applies, type LimitSubject } from './limiter';
import { BUDGET_PREFIX, workspacePk } from './read';
import { queryAll } from '../shared/db/ops';
import { loadOnce } from '../shared/load-once';

/**
 * Budget enforcement, exact across containers as the rate limits are: what a budget's
 * requests have cost lives in one counter per budget, `group_by` tuple and period in the
 * `usage` table (integer nano-dollars), read with a strongly consistent read before the
 * provider is called (far from the limit, a recent read or charge answer stands in for it)
 * and raised with an atomic `ADD` once the request's cost is known (when its log record is
 * written).
 *
 * - A request is refused (429 `budget_exceeded`) when a matching budget's period has
 *   already spent its limit.
 * - Overshoot bound: requests admitted while the period was under its limit each add their
 *   whole cost, so a period can end above its limit by at most the cost of the requests in
 *   flight when it was crossed: with N concurrent requests across all containers, at most
 *   (N - 1) x the largest cost of one request. Nothing is admitted after that.
 * - Read-ahead (`BUDGET_READ_AHEAD_MS`, ./known-counters.ts): while the spend a container
 *   learned of a counter within that time is under half its limit, no read is made; the
 *   bound holds unless more than half the limit is charged within it.
 * - Periods are UTC: a day, an ISO week from Monday 00:00, a calendar month, or `total`
 *   (never resets). A request is charged to the period it was admitted in.
 * - Each alert threshold (and the limit itself) emits exactly one event per period when
 *   spend crosses it: the increments are serialised by DynamoDB, so exactly one request
 *   sees its increment move the counter across.
 *
 * This module is the part every request runs: which budgets apply. Checking and charging
 * them (./budget-check.ts, ./budget-spend.ts) load with the first request that has one.
 */

export const NANO = 1e9;

/** From the stored item: the fields enforcement reads, numbers as numbers. */
const toActive = (b: BudgetPolicy): ActiveBudget => ({
  id: b.id,
  name: b.name ?? null,
  limitNusd: Math.round(Number(b.limit_usd) * NANO),
  limitUsd: Number(b.limit_usd),
  shardLimitUsd: Math.max(Number(b.limit_usd), Number(b.shard_limit_usd ?? 0)),
  period: b.period,
  thresholds: (b.alert_thresholds ?? []).map(Number),
  conditions: b.conditions ?? [],
  groupBy: (b.group_by ?? []).map((g) => g.key),
});

const budgetCache = /* @__PURE__ */ new TtlCache<ActiveBudget[]>(() => config().policyCacheTtlMs);

async function activeBudgets(workspaceId: string): Promise<ActiveBudget[]> {
  const budgets = await budgetCache.get(workspaceId, async () =>
    (await queryAll<BudgetPolicy>('policies', workspacePk(workspaceId), BUDGET_PREFIX)).filter((b) => b.status === 'active').map(toActive),
  );
  return budgets ?? [];
}

/** Drop cached budgets: of one workspace (after a write in this container) or all (tests). */
export function clearBudgetCache(workspaceId?: string): void {
  if (workspaceId === undefined) budgetCache.clear();
  else budgetCache.delete(workspaceId);
}

const NO_BUDGETS: BudgetGrant = { buckets: [], headers: {} };
const budgetCheck = /* @__PURE__ */ loadOnce(() => import('./budget-check'));

/**
 * Admit or refuse a request under the workspace's active budgets (before any provider is
 * called): throws a 429 `budget_exceeded` when a matching budget's period is spent.
 */
export async function enforceBudgets(subject: LimitSubject, now = Date.now()): Promise<BudgetGrant> {
  const matching = (await activeBudgets(subject.workspaceId)).filter((b) => applies(b, subject));
  if (matching.length === 0) return NO_BUDGETS;
  return (await budgetCheck()).checkBudgets(matching, subject, now);
}
