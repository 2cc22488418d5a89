import { deleteItem, getItem, putNew, queryAll, updateItem } from '../shared/db/ops';
import { conflict } from '../shared/errors';
import { uuid } from '../shared/ids';
import type { PolicyCondition, PolicyGroupBy, PolicyStatus, PolicyType, PolicyUnit, RateLimitPolicy } from './model';

/**
 * The policies table: one item per policy, `pk = WS#<workspace id>`, `sk = RLP#<policy id>`.
 * Keys are workspace-prefixed, so every read is tenant-scoped by construction; policy ids
 * are UUIDv7, so sort-key order is creation order. A workspace holds few policies, so
 * listing reads the whole partition (one query page in practice) and filters in memory.
 */

type PolicyItem = RateLimitPolicy & { pk: string; sk: string };

const SK_PREFIX = 'RLP#';
const workspacePk = (workspaceId: string) => `WS#${workspaceId}`;
const policyKey = (workspaceId: string, id: string) => ({ pk: workspacePk(workspaceId), sk: SK_PREFIX + id });

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Policy ids are uuids; anything else cannot name a policy (and is never sent to storage). */
export const isPolicyId = (id: string) => UUID_PATTERN.test(id);

function fromItem(item: PolicyItem): RateLimitPolicy {
  return {
    id: item.id,
    name: item.name ?? null,
    type: item.type,
    unit: item.unit,
    value: item.value,
    status: item.status,
    conditions: (item.conditions ?? []).map((c) => ({ key: c.key, value: c.value })),
    group_by: (item.group_by ?? []).map((g) => ({ key: g.key })),
    workspace_id: item.workspace_id,
    organisation_id: item.organisation_id,
    created_at: item.created_at,
    last_updated_at: item.last_updated_at,
  };
}

export interface NewPolicy {
  workspaceId: string;
  organisationId: string;
  name: string | null;
  type: PolicyType;
  unit: PolicyUnit;
  value: number;
  conditions: PolicyCondition[];
  groupBy: PolicyGroupBy[];
}

export async function createPolicy(input: NewPolicy): Promise<RateLimitPolicy> {
  const at = new Date().toISOString();
  const policy: RateLimitPolicy = {
    id: uuid(),
    name: input.name,
    type: input.type,
    unit: input.unit,
    value: input.value,
    status: 'active',
    conditions: input.conditions,
    group_by: input.groupBy,
    workspace_id: input.workspaceId,
    organisation_id: input.organisationId,
    created_at: at,
    last_updated_at: at,
  };
  const created = await putNew('policies', { ...policyKey(input.workspaceId, policy.id), ...policy });
  if (!created) throw conflict('A policy with this id already exists; retry the request.');
  return policy;
}

export async function getPolicy(workspaceId: string, id: string): Promise<RateLimitPolicy | undefined> {
  if (!isPolicyId(id)) return undefined;
  const item = await getItem<PolicyItem>('policies', policyKey(workspaceId, id), true);
  return item ? fromItem(item) : undefined;
}

/** Every policy of a workspace, any status, oldest first. */
export async function listWorkspacePolicies(workspaceId: string): Promise<RateLimitPolicy[]> {
  const items = await queryAll<PolicyItem>('policies', workspacePk(workspaceId), SK_PREFIX);
  return items.map(fromItem);
}

export interface PolicyPatch {
  name?: string | null;
  type?: PolicyType;
  unit?: PolicyUnit;
  value?: number;
  status?: PolicyStatus;
  conditions?: PolicyCondition[];
  group_by?: PolicyGroupBy[];
}

const MAX_UPDATE_ATTEMPTS = 5;

/**
 * Apply a patch; undefined when the policy does not exist. The write is conditional on
 * the `last_updated_at` it read, so concurrent updates never interleave, and each update
 * moves `last_updated_at` strictly forward (even within one millisecond).
 */
export async function updatePolicy(workspaceId: string, id: string, patch: PolicyPatch): Promise<RateLimitPolicy | undefined> {
  if (!isPolicyId(id)) return undefined;
  for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt++) {
    const current = await getItem<PolicyItem>('policies', policyKey(workspaceId, id), true);
    if (!current) return undefined;
    const next = Math.max(Date.now(), Date.parse(current.last_updated_at) + 1);
    const updated = await updateItem<PolicyItem>('policies', policyKey(workspaceId, id), {
      set: { ...patch, last_updated_at: new Date(next).toISOString() },
      condition: 'attribute_exists(#pk) AND #last_updated_at = :prev',
      conditionValues: { ':prev': current.last_updated_at },
    });
    if (updated) return fromItem(updated);
  }
  throw conflict('The policy is being changed by another request; retry.', 'concurrent_update');
}

/** True when the policy existed and is now gone. */
export async function deletePolicy(workspaceId: string, id: string): Promise<boolean> {
  if (!isPolicyId(id)) return false;
  return deleteItem('policies', policyKey(workspaceId, id), 'attribute_exists(pk)');
}
