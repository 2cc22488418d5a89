import { badRequest } from '../shared/errors';
import { z } from '../shared/validation';
import {
  MAX_CONDITIONS,
  MAX_CONDITION_VALUE_LENGTH,
  MAX_GROUP_BY,
  MAX_METADATA_KEY_LENGTH,
  METADATA_PREFIX,
  type PolicyCondition,
  type PolicyGroupBy,
  type PolicyStatus,
} from './model';

/**
 * Budgets: a policy kind beside rate limits, with the same conditions and `group_by`. A
 * budget caps what the matching requests may cost (USD, as priced in their request logs)
 * per period: a UTC day, an ISO week (from Monday 00:00 UTC), a UTC calendar month, or in
 * total (never resets).
 */

export const BUDGET_PERIODS = ['day', 'week', 'month', 'total'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

export interface BudgetPolicy {
  id: string;
  name: string | null;
  type: 'budget';
  limit_usd: number;
  period: BudgetPeriod;
  /** Shares of the limit (0 < t <= 1) whose crossing emits one event each per period. */
  alert_thresholds: number[];
  status: PolicyStatus;
  conditions: PolicyCondition[];
  group_by: PolicyGroupBy[];
  workspace_id: string;
  organisation_id: string;
  /** ISO 8601 */
  created_at: string;
  /** ISO 8601 */
  last_updated_at: string;
}

export const DEFAULT_ALERT_THRESHOLDS = [0.5, 0.8];
const MAX_THRESHOLDS = 10;
/** One billion dollars: anything above is a typo, not a budget. */
const MAX_LIMIT_USD = 1e9;

const key = z.string().check(z.minLength(1), z.maxLength(METADATA_PREFIX.length + MAX_METADATA_KEY_LENGTH));
const condition = z.strictObject({ key, value: z.string().check(z.minLength(1), z.maxLength(MAX_CONDITION_VALUE_LENGTH)) });
const groupBy = z.strictObject({ key });
const thresholds = z.array(z.number().check(z.gt(0), z.lte(1))).check(z.maxLength(MAX_THRESHOLDS));

const fields = {
  name: z.optional(z.nullable(z.string().check(z.maxLength(256)))),
  conditions: z.optional(z.array(condition).check(z.maxLength(MAX_CONDITIONS))),
  group_by: z.optional(z.array(groupBy).check(z.maxLength(MAX_GROUP_BY))),
  limit_usd: z.number().check(z.gt(0), z.lte(MAX_LIMIT_USD)),
  period: z.enum(BUDGET_PERIODS),
  alert_thresholds: z.optional(thresholds),
};

export const createBudgetSchema = z.strictObject({
  type: z.literal('budget'),
  ...fields,
  workspace_id: z.optional(z.string().check(z.minLength(1), z.maxLength(128))),
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
