import { badRequest, notFound } from '../shared/errors';
import { listObject, pageFromQuery } from '../shared/http/list';
import { ok } from '../shared/http/response';
import type { GatewayRequest, Route } from '../shared/http/types';
import { findWorkspace } from '../shared/stores/workspaces';
import { log } from '../shared/telemetry/logger';
import { parseInput, z } from '../shared/validation';
import { actionsSchema, checksSchema, compileChecks } from './definition';
import { createGuardrail, deleteGuardrail, getGuardrail, listGuardrails, listVersions, updateGuardrail, type Guardrail } from './store';
import { idempotency } from '../shared/http/idempotency';

/**
 * `/v1/guardrails`. The API key scopes every request to its workspace;
 * `workspace_id` (body on create, query elsewhere; id or slug) selects another workspace
 * of the key's organisation, `organisation_id` must be the key's organisation. Anything
 * else is a 404, as is a guardrail of another workspace.
 */
const MAX_REF_LENGTH = 128;

const name = z.string().check(z.minLength(1), z.maxLength(128));
const scopeId = z.string().check(z.minLength(1), z.maxLength(MAX_REF_LENGTH));

const createSchema = z.strictObject({
  name,
  checks: checksSchema,
  actions: actionsSchema,
  workspace_id: z.optional(scopeId),
  organisation_id: z.optional(scopeId),
});

const updateSchema = z.strictObject({
  name: z.optional(name),
  checks: z.optional(checksSchema),
  actions: z.optional(actionsSchema),
});

/** What create and update return. */
const creationResult = (g: Guardrail) => ({ id: g.id, slug: g.slug, version_id: g.version_id });

async function targetWorkspace(req: GatewayRequest, scope: { workspace_id?: string; organisation_id?: string }): Promise<string> {
  if (scope.organisation_id !== undefined && scope.organisation_id !== req.auth.organisationId) {
    throw notFound(`No organisation '${scope.organisation_id}' for this API key.`, 'organisation_id');
  }
  const ref = scope.workspace_id;
  if (ref === undefined || ref === req.auth.workspaceId) return req.auth.workspaceId;
  const ws = ref.length <= MAX_REF_LENGTH ? await findWorkspace(req.auth.organisationId, ref) : undefined;
  if (!ws) throw notFound(`No workspace '${ref.slice(0, MAX_REF_LENGTH)}' in this organisation.`, 'workspace_id');
  return ws.id;
}

const queryScope = (req: GatewayRequest) => targetWorkspace(req, { workspace_id: req.query.workspace_id || undefined });

function ref(req: GatewayRequest): string {
  const value = req.params.idOrSlug!;
  if (value.length > MAX_REF_LENGTH) throw notFound(`No guardrail '${value.slice(0, 32)}...' in this workspace.`, 'id');
  return value;
}

const missing = (id: string) => notFound(`No guardrail '${id}' in this workspace.`, 'id');

async function create(req: GatewayRequest) {
  const body = parseInput(createSchema, req.json());
  compileChecks(body.checks);
  const workspaceId = await targetWorkspace(req, body);
  const created = await createGuardrail({
    workspaceId,
    organisationId: req.auth.organisationId,
    name: body.name,
    definition: { checks: body.checks, actions: body.actions },
  });
  log.info('guardrail created', { guardrail_id: created.id, version_id: created.version_id, target_workspace_id: workspaceId }, req.context);
  return ok(creationResult(created));
}

async function list(req: GatewayRequest) {
  const workspaceId = await queryScope(req);
  const page = await listGuardrails(workspaceId, pageFromQuery(req.query, { order: 'asc' }));
  return ok(listObject(page.items, page.hasMore));
}

async function get(req: GatewayRequest) {
  const id = ref(req);
  const found = await getGuardrail(await queryScope(req), id);
  if (!found) throw missing(id);
  return ok(found);
}

async function versions(req: GatewayRequest) {
  const id = ref(req);
  const found = await listVersions(await queryScope(req), id);
  if (!found) throw missing(id);
  return ok({ object: 'list', data: found, first_id: found[0]?.id ?? null, last_id: found.at(-1)?.id ?? null, has_more: false });
}

async function update(req: GatewayRequest) {
  const id = ref(req);
  const body = parseInput(updateSchema, req.json());
  if (body.name === undefined && body.checks === undefined && body.actions === undefined) {
    throw badRequest('Nothing to update: send `name`, `checks` and/or `actions`.', null, 'invalid_value');
  }
  if (body.checks) compileChecks(body.checks);
  const workspaceId = await queryScope(req);
  const updated = await updateGuardrail(workspaceId, id, { name: body.name, definition: { checks: body.checks, actions: body.actions } });
  if (!updated) throw missing(id);
  log.info('guardrail updated', { guardrail_id: updated.id, version_id: updated.version_id, version: updated.version }, req.context);
  return ok(creationResult(updated));
}

async function remove(req: GatewayRequest) {
  const id = ref(req);
  const deleted = await deleteGuardrail(await queryScope(req), id);
  if (!deleted) throw missing(id);
  log.info('guardrail deleted', { guardrail_id: deleted.id }, req.context);
  return ok({ object: 'guardrail.deleted', id: deleted.id, slug: deleted.slug, deleted: true });
}

export const guardrailRoutes: Route[] = [
  { method: 'POST', path: '/v1/guardrails', access: 'workspace-admin', use: [idempotency], handler: create },
  { method: 'GET', path: '/v1/guardrails', access: 'viewer', handler: list },
  { method: 'GET', path: '/v1/guardrails/{idOrSlug}', access: 'viewer', handler: get },
  { method: 'GET', path: '/v1/guardrails/{idOrSlug}/versions', access: 'viewer', handler: versions },
  { method: 'PUT', path: '/v1/guardrails/{idOrSlug}', access: 'workspace-admin', handler: update },
  { method: 'DELETE', path: '/v1/guardrails/{idOrSlug}', access: 'workspace-admin', handler: remove },
];

/** The body schemas, for the OpenAPI document (infra/openapi). */
export { createSchema, updateSchema };
