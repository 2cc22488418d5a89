import { badRequest } from '../shared/errors';
import { z } from '../shared/validation';
import { commonFields, workspaceRef, type PolicyBase } from './model';

/**
 * Budgets: a policy kind beside rate limits, with the same conditions and `group_by`. A
 * budget caps what the matching requests may cost (USD, as priced in their request logs)
 * per period: a UTC day, an ISO week (from Monday 00:00 UTC), a UTC calendar month, or in
 * total (never resets).
 */

export const BUDGET_PERIODS = ['day', 'week', 'month', 'total'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

export interface BudgetPolicy extends PolicyBase {
  type: 'budget';
  limit_usd: number;
  period: BudgetPeriod;
  /** Shares of the limit (0 < t <= 1) whose crossing emits one event each per period. */
  alert_thresholds: number[];
  /**
   * The largest `limit_usd` the budget ever had (internal, never answered): its counters are
   * sharded by it, so a lowered limit still reads every shard its period's spend is in.
   */
  shard_limit_usd?: number;
}

export const DEFAULT_ALERT_THRESHOLDS = [0.5, 0.8];
const MAX_THRESHOLDS = 10;
/** One billion dollars: anything above is a typo, not a budget. */
const MAX_LIMIT_USD = 1e9;

const thresholds = z.array(z.number().check(z.gt(0), z.lte(1))).check(z.maxLength(MAX_THRESHOLDS));

const fields = {
  ...commonFields,
  limit_usd: z.number().check(z.gt(0), z.lte(MAX_LIMIT_USD)),
  period: z.enum(BUDGET_PERIODS),
  alert_thresholds: z.optional(thresholds),
};

export const createBudgetSchema = z.strictObject({
  type: z.literal('budget'),
  ...fields,
  workspace_id: workspaceRef,
});

export const updateBudgetSchema = z.strictObject({
  name: fields.name,
  conditions: fields.conditions,
  group_by: fields.group_by,
  limit_usd: z.optional(fields.limit_usd),
  period: z.optional(fields.period),
  alert_thresholds: fields.alert_thresholds,
  status: z.optional(z.enum(['active', 'archived'] as const)),
});

/** Thresholds ascending and distinct (a repeated one would alert twice). */
export function normaliseThresholds(values: readonly number[] | undefined): number[] | undefined {
  if (values === undefined) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  sorted.forEach((t, i) => {
    if (i > 0 && sorted[i - 1] === t) throw badRequest(`Invalid \`alert_thresholds\`: ${t} is listed twice.`, 'alert_thresholds', 'invalid_value');
  });
  return sorted;
}

// ---- enforcement shapes (budgets.ts picks, budget-check.ts checks, budget-spend.ts charges) ----

/** A budget as enforcement reads it. */
export interface ActiveBudget {
  id: string;
  name: string | null;
  limitNusd: number;
  limitUsd: number;
  /** What the counters are sharded by: the largest limit the budget ever had. */
  shardLimitUsd: number;
  period: BudgetPeriod;
  thresholds: readonly number[];
  conditions: ReadonlyArray<{ key: string; value: string }>;
  groupBy: readonly string[];
}

/** Where an admitted request's cost goes: opaque to callers, handed back to `chargeBudgets` with the request's log record. */
export interface BudgetBucket {
  readonly budget: ActiveBudget;
  /** The counter's shard the request was admitted on (its cost goes there). */
  readonly pk: string;
  readonly sk: string;
  readonly ttl?: number;
  /** A sharded budget (./shards.ts): how many shards, this shard's slice of the limit, and the unsharded key. */
  readonly sharded?: { readonly shards: number; readonly sliceNusd: number; readonly basePk: string };
}

export interface BudgetGrant {
  readonly buckets: readonly BudgetBucket[];
  /** `x-budget-*` of the budget with the least left; empty when none applies. */
  readonly headers: Record<string, string>;
}
