import { notFound } from '../shared/errors';
import { ok } from '../shared/http/response';
import type { GatewayRequest, Route } from '../shared/http/types';
import { findWorkspace } from '../shared/stores/workspaces';
import { log } from '../shared/telemetry/logger';
import { parseInput, queryEnum, queryInt } from '../shared/validation';
import { clearPolicyCache } from './limiter';
import { checkKeys, createSchema, POLICY_STATUSES, POLICY_TYPES, POLICY_UNITS, updateSchema, withObject, type RateLimitPolicy } from './model';
import { createPolicy, deletePolicy, getPolicy, listWorkspacePolicies, updatePolicy, type PolicyPatch } from './store';

/**
 * `/v1/policies/rate-limits`: create, read, list, update, archive, delete.
 * A request acts on the key's workspace, or on `workspace_id` (id or slug) when it names
 * a workspace of the key's organisation; any other workspace, or a policy of another
 * workspace, is a 404.
 */

const MAX_REF_LENGTH = 128;
const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 1000;
const MAX_PAGE = 1_000_000;

async function targetWorkspace(req: GatewayRequest, ref: string | undefined): Promise<string> {
  if (ref === undefined || ref === '' || ref === req.auth.workspaceId) return req.auth.workspaceId;
  const ws = ref.length <= MAX_REF_LENGTH ? await findWorkspace(req.auth.organisationId, ref) : undefined;
  if (!ws) throw notFound(`No workspace '${ref.slice(0, MAX_REF_LENGTH)}' in this organisation.`, 'workspace_id');
  return ws.id;
}

const policyNotFound = (id: string) => notFound(`No rate-limits policy '${id.slice(0, MAX_REF_LENGTH)}' in this workspace.`, 'id');

async function create(req: GatewayRequest) {
  const body = parseInput(createSchema, req.json());
  checkKeys(body.conditions, body.group_by);
  const workspaceId = await targetWorkspace(req, body.workspace_id);
  const policy = await createPolicy({
    workspaceId,
    organisationId: req.auth.organisationId,
    name: body.name ?? null,
    type: body.type,
    unit: body.unit,
    value: body.value,
    conditions: body.conditions ?? [],
    groupBy: body.group_by ?? [],
  });
  clearPolicyCache(workspaceId);
  log.info('rate-limits policy created', { policy_id: policy.id, target_workspace_id: workspaceId, by_key_id: req.auth.keyId }, req.context);
  return ok(withObject(policy));
}

async function get(req: GatewayRequest) {
  const status = queryEnum(req.query.status, 'status', POLICY_STATUSES, 'active');
  const workspaceId = await targetWorkspace(req, req.query.workspace_id);
  const policy = await getPolicy(workspaceId, req.params.id!);
  // A policy in the other status is not found: `?status=archived` reads archived ones.
  if (!policy || policy.status !== status) throw policyNotFound(req.params.id!);
  return ok(withObject(policy));
}

async function list(req: GatewayRequest) {
  const status = queryEnum(req.query.status, 'status', POLICY_STATUSES, 'active');
  const type = queryEnum(req.query.type, 'type', POLICY_TYPES);
  const unit = queryEnum(req.query.unit, 'unit', POLICY_UNITS);
  const pageSize = queryInt(req.query.page_size, 'page_size', 0, MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE);
  const currentPage = queryInt(req.query.current_page, 'current_page', 0, MAX_PAGE, 0);
  const workspaceId = await targetWorkspace(req, req.query.workspace_id);
  const matching = (await listWorkspacePolicies(workspaceId))
    .filter((p) => p.status === status && (!type || p.type === type) && (!unit || p.unit === unit))
    .reverse(); // newest first
  const start = currentPage * pageSize;
  const data: RateLimitPolicy[] = matching.slice(start, start + pageSize);
  return ok({ object: 'list', data, total: matching.length });
}

async function applyUpdate(req: GatewayRequest, patch: PolicyPatch) {
  const workspaceId = await targetWorkspace(req, req.query.workspace_id);
  const policy = await updatePolicy(workspaceId, req.params.id!, patch);
  if (!policy) throw policyNotFound(req.params.id!);
  clearPolicyCache(workspaceId);
  log.info('rate-limits policy updated', { policy_id: policy.id, status: policy.status, by_key_id: req.auth.keyId }, req.context);
  return ok(withObject(policy));
}

async function update(req: GatewayRequest) {
  const body = parseInput(updateSchema, req.json());
  checkKeys(body.conditions, body.group_by);
  return applyUpdate(req, body);
}

const archive = (req: GatewayRequest) => applyUpdate(req, { status: 'archived' });

async function remove(req: GatewayRequest) {
  const workspaceId = await targetWorkspace(req, req.query.workspace_id);
  const id = req.params.id!;
  if (!(await deletePolicy(workspaceId, id))) throw policyNotFound(id);
  clearPolicyCache(workspaceId);
  log.info('rate-limits policy deleted', { policy_id: id, by_key_id: req.auth.keyId }, req.context);
  return ok({ object: 'policy_rate_limits.deleted', id, deleted: true });
}

const BASE = '/v1/policies/rate-limits';

export const policyRoutes: Route[] = [
  { method: 'POST', path: BASE, scope: 'admin', handler: create },
  { method: 'GET', path: BASE, scope: 'admin', handler: list },
  { method: 'GET', path: `${BASE}/{id}`, scope: 'admin', handler: get },
  { method: 'PUT', path: `${BASE}/{id}`, scope: 'admin', handler: update },
  { method: 'DELETE', path: `${BASE}/{id}`, scope: 'admin', handler: remove },
  { method: 'POST', path: `${BASE}/{id}/archive`, scope: 'admin', handler: archive },
];
