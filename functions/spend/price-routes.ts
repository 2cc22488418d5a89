import { alreadyExists, notFound } from '../shared/errors';
import { ok } from '../shared/http/response';
import type { GatewayRequest, Route } from '../shared/http/types';
import { log } from '../shared/telemetry/logger';
import { parseInput } from '../shared/validation';
import { targetWorkspace } from '../policies/routes';
import {
  createOverride,
  createOverrideSchema,
  deleteOverride,
  getOverride,
  listOverrides,
  replaceOverridePrices,
  updateOverrideSchema,
} from './price-overrides';
import { idempotency } from '../shared/http/idempotency';

/**
 * `/v1/prices`: a workspace's price overrides (create, list, read, replace, delete), with the
 * rate-limit policies' workspace rules: the key's workspace, or `workspace_id` naming one of
 * its organisation's.
 */

const MAX_REF_LENGTH = 128;
const overrideNotFound = (id: string) => notFound(`No price override '${id.slice(0, MAX_REF_LENGTH)}' in this workspace.`, 'id');

async function create(req: GatewayRequest) {
  const { provider, model, workspace_id, ...prices } = parseInput(createOverrideSchema, req.json());
  const workspaceId = await targetWorkspace(req, workspace_id);
  const override = await createOverride(workspaceId, provider, model, prices);
  if (!override)
    throw alreadyExists(
      `This workspace already has a price override for provider '${provider}' and model '${model}'; change it with PUT.`,
      'price_override_exists',
    );
  log.info('price override created', { price_id: override.id, provider, model, target_workspace_id: workspaceId, by_key_id: req.auth.keyId }, req.context);
  return ok(override);
}

async function list(req: GatewayRequest) {
  const workspaceId = await targetWorkspace(req, req.query.workspace_id);
  const data = await listOverrides(workspaceId);
  return ok({ object: 'list', data, total: data.length });
}

async function get(req: GatewayRequest) {
  const workspaceId = await targetWorkspace(req, req.query.workspace_id);
  const override = await getOverride(workspaceId, req.params.id!);
  if (!override) throw overrideNotFound(req.params.id!);
  return ok(override);
}

async function replace(req: GatewayRequest) {
  const prices = parseInput(updateOverrideSchema, req.json());
  const workspaceId = await targetWorkspace(req, req.query.workspace_id);
  const override = await replaceOverridePrices(workspaceId, req.params.id!, prices);
  if (!override) throw overrideNotFound(req.params.id!);
  log.info('price override replaced', { price_id: override.id, by_key_id: req.auth.keyId }, req.context);
  return ok(override);
}

async function remove(req: GatewayRequest) {
  const workspaceId = await targetWorkspace(req, req.query.workspace_id);
  const id = req.params.id!;
  if (!(await deleteOverride(workspaceId, id))) throw overrideNotFound(id);
  log.info('price override deleted', { price_id: id, by_key_id: req.auth.keyId }, req.context);
  return ok({ object: 'price_override.deleted', id, deleted: true });
}

const BASE = '/v1/prices';

export const priceRoutes: Route[] = [
  { method: 'POST', path: BASE, access: 'workspace-admin', use: [idempotency], handler: create },
  { method: 'GET', path: BASE, access: 'viewer', handler: list },
  { method: 'GET', path: `${BASE}/{id}`, access: 'viewer', handler: get },
  { method: 'PUT', path: `${BASE}/{id}`, access: 'workspace-admin', handler: replace },
  { method: 'DELETE', path: `${BASE}/{id}`, access: 'workspace-admin', handler: remove },
];
