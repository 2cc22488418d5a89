import { queryAll } from '../shared/db/ops';
import type { BudgetPolicy } from './budget-model';
import type { PolicyBase, RateLimitPolicy } from './model';

/**
 * The read side of the policies table (`pk = WS#<workspace id>`, `sk = <kind prefix><id>`):
 * what the data plane needs to enforce policies, apart from the writes in ./store.ts so
 * that functions granted read access bundle no write.
 */

export const RATE_LIMIT_PREFIX = 'RLP#';
export const BUDGET_PREFIX = 'BUD#';

export const workspacePk = (workspaceId: string) => `WS#${workspaceId}`;

/** The fields every kind shares, copied off a stored item (no key attributes). */
function baseFromItem(item: PolicyBase): PolicyBase {
  return {
    id: item.id,
    name: item.name ?? null,
    status: item.status,
    conditions: (item.conditions ?? []).map((c) => ({ key: c.key, value: c.value })),
    group_by: (item.group_by ?? []).map((g) => ({ key: g.key })),
    workspace_id: item.workspace_id,
    organisation_id: item.organisation_id,
    created_at: item.created_at,
    last_updated_at: item.last_updated_at,
  };
}

export const rateLimitFromItem = (item: RateLimitPolicy): RateLimitPolicy => ({
  ...baseFromItem(item),
  type: item.type,
  unit: item.unit,
  value: item.value,
  ...(item.shard_value === undefined ? {} : { shard_value: Number(item.shard_value) }),
});

export const budgetFromItem = (item: BudgetPolicy): BudgetPolicy => ({
  ...baseFromItem(item),
  type: 'budget',
  limit_usd: Number(item.limit_usd),
  period: item.period,
  alert_thresholds: (item.alert_thresholds ?? []).map(Number),
});

/** Every rate-limit policy of a workspace, any status, oldest first. */
export async function listRateLimitPolicies(workspaceId: string): Promise<RateLimitPolicy[]> {
  return (await queryAll<RateLimitPolicy>('policies', workspacePk(workspaceId), RATE_LIMIT_PREFIX)).map(rateLimitFromItem);
}
