import { badRequest, notFound } from '../shared/errors';
import { listObject, pageFromQuery } from '../shared/http/list';
import { ok } from '../shared/http/response';
import type { GatewayRequest, Route } from '../shared/http/types';
import {
  createConfig,
  deleteConfig,
  getConfig,
  isConfigId,
  listConfigs,
  MAX_CONFIG_REF_LENGTH,
  updateConfig,
  validateGatewayConfig,
} from '../shared/stores/configs';
import { log } from '../shared/telemetry/logger';
import { parseInput, z } from '../shared/validation';
import { idempotency } from '../shared/http/idempotency';

/** Saved configs: `/v1/configs`, addressed by id (`pc-...`) or slug. */

const slug = z.string().check(
  z.regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'expected 1-64 lower-case letters, digits and dashes, starting with a letter or digit'),
  z.refine((v) => !isConfigId(v), 'must not start with `pc-`, which marks config ids'),
);
const name = z.string().check(z.minLength(1), z.maxLength(128));

const createSchema = z.strictObject({ name, slug: z.optional(slug), config: z.optional(z.unknown()) });
const updateSchema = z.strictObject({ name: z.optional(name), config: z.optional(z.unknown()) });

function ref(req: GatewayRequest): string {
  const value = req.params.idOrSlug!;
  if (value.length > MAX_CONFIG_REF_LENGTH) throw notFound(`No config '${value.slice(0, 32)}...' in this workspace.`, 'id');
  return value;
}

async function create(req: GatewayRequest) {
  const body = parseInput(createSchema, req.json());
  validateGatewayConfig(body.config);
  const created = await createConfig(req.auth.workspaceId, {
    name: body.name,
    slug: body.slug,
    config: body.config as Record<string, unknown>,
  });
  log.info('config created', { config_id: created.id, slug: created.slug }, req.context);
  return ok(created);
}

async function list(req: GatewayRequest) {
  const page = await listConfigs(req.auth.workspaceId, pageFromQuery(req.query, { order: 'asc' }));
  return ok(listObject(page.items, page.hasMore));
}

async function get(req: GatewayRequest) {
  const id = ref(req);
  const found = await getConfig(req.auth.workspaceId, id);
  if (!found) throw notFound(`No config '${id}' in this workspace.`, 'id');
  return ok(found);
}

async function update(req: GatewayRequest) {
  const id = ref(req);
  const body = parseInput(updateSchema, req.json());
  if (body.name === undefined && body.config === undefined) {
    throw badRequest('Nothing to update: send `name` and/or `config`.', null, 'invalid_value');
  }
  if (body.config !== undefined) validateGatewayConfig(body.config);
  const updated = await updateConfig(req.auth.workspaceId, id, {
    name: body.name,
    config: body.config as Record<string, unknown> | undefined,
  });
  if (!updated) throw notFound(`No config '${id}' in this workspace.`, 'id');
  log.info('config updated', { config_id: updated.id, slug: updated.slug }, req.context);
  return ok(updated);
}

async function remove(req: GatewayRequest) {
  const id = ref(req);
  const deleted = await deleteConfig(req.auth.workspaceId, id);
  if (!deleted) throw notFound(`No config '${id}' in this workspace.`, 'id');
  log.info('config deleted', { config_id: deleted.id, slug: deleted.slug }, req.context);
  return ok({ object: 'config.deleted', id: deleted.id, slug: deleted.slug, deleted: true });
}

export const configRoutes: Route[] = [
  { method: 'POST', path: '/v1/configs', access: 'workspace-admin', use: [idempotency], handler: create },
  { method: 'GET', path: '/v1/configs', access: 'viewer', handler: list },
  { method: 'GET', path: '/v1/configs/{idOrSlug}', access: 'viewer', handler: get },
  { method: 'PUT', path: '/v1/configs/{idOrSlug}', access: 'workspace-admin', handler: update },
  { method: 'DELETE', path: '/v1/configs/{idOrSlug}', access: 'workspace-admin', handler: remove },
];

/** The body schemas, for the OpenAPI document (infra/openapi). */
export { createSchema, updateSchema };
