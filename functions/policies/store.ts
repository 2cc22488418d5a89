import { deleteItem, getItem, putNew, queryAll, updateItem } from '../shared/db/ops';
import { conflict } from '../shared/errors';
import type { BudgetPolicy } from './budget-model';
import type { RateLimitPolicy } from './model';
import { BUDGET_PREFIX, budgetFromItem, RATE_LIMIT_PREFIX, rateLimitFromItem, workspacePk } from './read';

/**
 * The policies table: one item per policy, `pk = WS#<workspace id>`, `sk = <kind prefix><policy id>`
 * (`RLP#` rate limits, `BUD#` budgets). Keys are workspace-prefixed, so every read is
 * tenant-scoped by construction; policy ids are UUIDv7, so sort-key order is creation
 * order. A workspace holds few policies, so listing reads the whole partition of a kind
 * (one query page in practice) and filters in memory.
 */

/** What every kind of policy has. */
interface StoredPolicy {
  id: string;
  status: 'active' | 'archived';
  workspace_id: string;
  created_at: string;
  last_updated_at: string;
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Policy ids are uuids; anything else cannot name a policy (and is never sent to storage). */
export const isPolicyId = (id: string) => UUID_PATTERN.test(id);

const MAX_UPDATE_ATTEMPTS = 5;

export type PolicyPatch<P extends StoredPolicy> = Partial<Omit<P, keyof StoredPolicy>> & { status?: P['status'] };

export interface PolicyStore<P extends StoredPolicy> {
  create(policy: P): Promise<P>;
  get(workspaceId: string, id: string): Promise<P | undefined>;
  /** Every policy of the kind in a workspace, any status, oldest first. */
  list(workspaceId: string): Promise<P[]>;
  /**
   * Apply a patch; undefined when the policy does not exist. The write is conditional on
   * the `last_updated_at` it read, so concurrent updates never interleave, and each update
   * moves `last_updated_at` strictly forward (even within one millisecond).
   */
  update(workspaceId: string, id: string, patch: PolicyPatch<P> | ((current: P) => PolicyPatch<P>)): Promise<P | undefined>;
  /** True when the policy existed and is now gone. */
  remove(workspaceId: string, id: string): Promise<boolean>;
}

export function policyStore<P extends StoredPolicy>(skPrefix: string, fromItem: (item: P) => P): PolicyStore<P> {
  const key = (workspaceId: string, id: string) => ({ pk: workspacePk(workspaceId), sk: skPrefix + id });
  return {
    async create(policy) {
      const created = await putNew('policies', { ...key(policy.workspace_id, policy.id), ...(policy as StoredPolicy & Record<string, unknown>) });
      if (!created) throw conflict('A policy with this id already exists; retry the request.');
      return policy;
    },
    async get(workspaceId, id) {
      if (!isPolicyId(id)) return undefined;
      const item = await getItem<P>('policies', key(workspaceId, id), true);
      return item ? fromItem(item) : undefined;
    },
    async list(workspaceId) {
      return (await queryAll<P>('policies', workspacePk(workspaceId), skPrefix)).map(fromItem);
    },
    async update(workspaceId, id, patch) {
      if (!isPolicyId(id)) return undefined;
      for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt++) {
        const current = await getItem<P>('policies', key(workspaceId, id), true);
        if (!current) return undefined;
        const next = Math.max(Date.now(), Date.parse(current.last_updated_at) + 1);
        const updated = await updateItem<P>('policies', key(workspaceId, id), {
          set: { ...(typeof patch === 'function' ? patch(current) : patch), last_updated_at: new Date(next).toISOString() },
          condition: 'attribute_exists(#pk) AND #last_updated_at = :prev',
          conditionValues: { ':prev': current.last_updated_at },
        });
        if (updated) return fromItem(updated);
      }
      throw conflict('The policy is being changed by another request; retry.', 'concurrent_update');
    },
    async remove(workspaceId, id) {
      if (!isPolicyId(id)) return false;
      return deleteItem('policies', key(workspaceId, id), 'attribute_exists(pk)');
    },
  };
}

export const rateLimitPolicies = policyStore<RateLimitPolicy>(RATE_LIMIT_PREFIX, rateLimitFromItem);

export const budgetPolicies = policyStore<BudgetPolicy>(BUDGET_PREFIX, budgetFromItem);
