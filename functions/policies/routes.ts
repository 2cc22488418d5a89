import { notFound } from '../shared/errors';
import { ok } from '../shared/http/response';
import type { GatewayRequest, Route } from '../shared/http/types';
import { uuid } from '../shared/ids';
import { findWorkspace } from '../shared/stores/workspaces';
import { log } from '../shared/telemetry/logger';
import { parseInput, queryEnum, queryInt } from '../shared/validation';
import { syncBudgetAlarm } from './budget-alarms';
import { clearBudgetCache } from './budgets';
import { createBudgetSchema, DEFAULT_ALERT_THRESHOLDS, normaliseThresholds, updateBudgetSchema, type BudgetPolicy } from './budget-model';
import { clearPolicyCache } from './limiter';
import { checkKeys, createSchema, POLICY_STATUSES, POLICY_TYPES, POLICY_UNITS, updateSchema, type PolicyBase, type RateLimitPolicy } from './model';
import { budgetPolicies, rateLimitPolicies, type PolicyStore } from './store';
import { idempotency } from '../shared/http/idempotency';

/**
 * `/v1/policies/rate-limits` and `/v1/policies/budgets`: create, read, list, update,
 * archive, delete, with one set of rules. A request acts on the key's workspace, or on
 * `workspace_id` (id or slug) when it names a workspace of the key's organisation; any
 * other workspace, or a policy of another workspace, is a 404.
 */

const MAX_REF_LENGTH = 128;
const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 1000;
const MAX_PAGE = 1_000_000;

/** The workspace a control-plane request acts on: the key's own, or one of its organisation's named by id or slug. */
export async function targetWorkspace(req: GatewayRequest, ref: string | undefined): Promise<string> {
  if (ref === undefined || ref === '' || ref === req.auth.workspaceId) return req.auth.workspaceId;
  const ws = ref.length <= MAX_REF_LENGTH ? await findWorkspace(req.auth.organisationId, ref) : undefined;
  if (!ws) throw notFound(`No workspace '${ref.slice(0, MAX_REF_LENGTH)}' in this organisation.`, 'workspace_id');
  return ws.id;
}

type Common = PolicyBase;

/** What differs between the kinds of policy; everything else is shared. */
interface PolicyKind<P extends Common> {
  base: string;
  /** `object` of a single policy. */
  object: string;
  /** "rate-limits policy", "budget": for messages and logs. */
  noun: string;
  store: PolicyStore<P>;
  /** The new policy's own fields from a create body (validated). */
  fromCreate(req: GatewayRequest): { workspaceRef: string | undefined; fields: Omit<P, keyof Common> } & Pick<Common, 'name' | 'conditions' | 'group_by'>;
  /** The patch from an update body (validated). */
  fromUpdate(req: GatewayRequest): Partial<P>;
  /** The patch as written, given the stored policy (default: as it is). */
  patchOf?(current: P, patch: Partial<P>): Partial<P>;
  /** Stored fields that are not part of the answer. */
  internal?: readonly string[];
  /** Extra list filters from the query. */
  listFilter(req: GatewayRequest): (p: P) => boolean;
  clearCache(workspaceId: string): void;
  /** After a policy was created, changed or deleted (`undefined`): e.g. its alarm. */
  afterWrite?(id: string, policy: P | undefined, req: GatewayRequest): Promise<void>;
}

function routesFor<P extends Common>(kind: PolicyKind<P>): Route[] {
  const notFoundError = (id: string) => notFound(`No ${kind.noun} '${id.slice(0, MAX_REF_LENGTH)}' in this workspace.`, 'id');
  const shown = (p: P) => {
    const visible: Record<string, unknown> = { ...(p as object) };
    for (const field of kind.internal ?? []) delete visible[field];
    return visible;
  };
  const withObject = (p: P) => ({ object: kind.object, ...shown(p) });

  async function create(req: GatewayRequest) {
    const { workspaceRef, fields, name, conditions, group_by } = kind.fromCreate(req);
    checkKeys(conditions, group_by);
    const workspaceId = await targetWorkspace(req, workspaceRef);
    const at = new Date().toISOString();
    const policy = await kind.store.create({
      id: uuid(),
      name,
      ...fields,
      status: 'active',
      conditions,
      group_by,
      workspace_id: workspaceId,
      organisation_id: req.auth.organisationId,
      created_at: at,
      last_updated_at: at,
    } as P);
    kind.clearCache(workspaceId);
    log.info(`${kind.noun} created`, { policy_id: policy.id, target_workspace_id: workspaceId, by_key_id: req.auth.keyId }, req.context);
    await kind.afterWrite?.(policy.id, policy, req);
    return ok(withObject(policy));
  }

  async function get(req: GatewayRequest) {
    const status = queryEnum(req.query.status, 'status', POLICY_STATUSES, 'active');
    const workspaceId = await targetWorkspace(req, req.query.workspace_id);
    const policy = await kind.store.get(workspaceId, req.params.id!);
    // A policy in the other status is not found: `?status=archived` reads archived ones.
    if (!policy || policy.status !== status) throw notFoundError(req.params.id!);
    return ok(withObject(policy));
  }

  async function list(req: GatewayRequest) {
    const status = queryEnum(req.query.status, 'status', POLICY_STATUSES, 'active');
    const filter = kind.listFilter(req);
    const pageSize = queryInt(req.query.page_size, 'page_size', 0, MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE);
    const currentPage = queryInt(req.query.current_page, 'current_page', 0, MAX_PAGE, 0);
    const workspaceId = await targetWorkspace(req, req.query.workspace_id);
    const matching = (await kind.store.list(workspaceId)).filter((p) => p.status === status && filter(p)).reverse(); // newest first
    const start = currentPage * pageSize;
    return ok({ object: 'list', data: matching.slice(start, start + pageSize).map(shown), total: matching.length });
  }

  async function applyUpdate(req: GatewayRequest, patch: Partial<P>) {
    const workspaceId = await targetWorkspace(req, req.query.workspace_id);
    const { patchOf } = kind;
    const policy = await kind.store.update(workspaceId, req.params.id!, patchOf ? (current) => patchOf(current, patch) : patch);
    if (!policy) throw notFoundError(req.params.id!);
    kind.clearCache(workspaceId);
    log.info(`${kind.noun} updated`, { policy_id: policy.id, status: policy.status, by_key_id: req.auth.keyId }, req.context);
    await kind.afterWrite?.(policy.id, policy, req);
    return ok(withObject(policy));
  }

  async function update(req: GatewayRequest) {
    const patch = kind.fromUpdate(req);
    checkKeys(patch.conditions, patch.group_by);
    return applyUpdate(req, patch);
  }

  const archive = (req: GatewayRequest) => applyUpdate(req, { status: 'archived' } as Partial<P>);

  async function remove(req: GatewayRequest) {
    const workspaceId = await targetWorkspace(req, req.query.workspace_id);
    const id = req.params.id!;
    if (!(await kind.store.remove(workspaceId, id))) throw notFoundError(id);
    kind.clearCache(workspaceId);
    log.info(`${kind.noun} deleted`, { policy_id: id, by_key_id: req.auth.keyId }, req.context);
    await kind.afterWrite?.(id, undefined, req);
    return ok({ object: `${kind.object}.deleted`, id, deleted: true });
  }

  const { base } = kind;
  return [
    { method: 'POST', path: base, access: 'workspace-admin', use: [idempotency], handler: create },
    { method: 'GET', path: base, access: 'viewer', handler: list },
    { method: 'GET', path: `${base}/{id}`, access: 'viewer', handler: get },
    { method: 'PUT', path: `${base}/{id}`, access: 'workspace-admin', handler: update },
    { method: 'DELETE', path: `${base}/{id}`, access: 'workspace-admin', handler: remove },
    { method: 'POST', path: `${base}/{id}/archive`, access: 'workspace-admin', handler: archive },
  ];
}

const rateLimits: PolicyKind<RateLimitPolicy> = {
  base: '/v1/policies/rate-limits',
  object: 'policy_rate_limits',
  noun: 'rate-limits policy',
  store: rateLimitPolicies,
  fromCreate(req) {
    const body = parseInput(createSchema, req.json());
    return {
      workspaceRef: body.workspace_id,
      name: body.name ?? null,
      conditions: body.conditions ?? [],
      group_by: body.group_by ?? [],
      fields: { type: body.type, unit: body.unit, value: body.value },
    };
  },
  fromUpdate: (req) => parseInput(updateSchema, req.json()),
  // A lowered value keeps its counters' shards (model.ts, shard_value), as a budget's limit does.
  patchOf: (current, patch) => (patch.value === undefined ? patch : { ...patch, shard_value: Math.max(current.shard_value ?? current.value, patch.value) }),
  internal: ['shard_value'],
  listFilter(req) {
    const type = queryEnum(req.query.type, 'type', POLICY_TYPES);
    const unit = queryEnum(req.query.unit, 'unit', POLICY_UNITS);
    return (p) => (!type || p.type === type) && (!unit || p.unit === unit);
  },
  clearCache: clearPolicyCache,
};

const budgets: PolicyKind<BudgetPolicy> = {
  base: '/v1/policies/budgets',
  object: 'policy_budget',
  noun: 'budget',
  store: budgetPolicies,
  fromCreate(req) {
    const body = parseInput(createBudgetSchema, req.json());
    return {
      workspaceRef: body.workspace_id,
      name: body.name ?? null,
      conditions: body.conditions ?? [],
      group_by: body.group_by ?? [],
      fields: {
        type: 'budget',
        limit_usd: body.limit_usd,
        period: body.period,
        alert_thresholds: normaliseThresholds(body.alert_thresholds) ?? DEFAULT_ALERT_THRESHOLDS,
      },
    };
  },
  fromUpdate(req) {
    const body = parseInput(updateBudgetSchema, req.json());
    const thresholds = normaliseThresholds(body.alert_thresholds);
    return thresholds ? { ...body, alert_thresholds: thresholds } : (body as Partial<BudgetPolicy>);
  },
  // A lowered limit keeps its counters' shards (budget-model.ts, shard_limit_usd).
  patchOf: (current, patch) =>
    patch.limit_usd === undefined ? patch : { ...patch, shard_limit_usd: Math.max(current.shard_limit_usd ?? current.limit_usd, patch.limit_usd) },
  internal: ['shard_limit_usd'],
  listFilter: () => () => true,
  clearCache: clearBudgetCache,
  afterWrite: (id, budget, req) => syncBudgetAlarm(id, budget, req.context),
};

export const policyRoutes: Route[] = [...routesFor(rateLimits), ...routesFor(budgets)];
