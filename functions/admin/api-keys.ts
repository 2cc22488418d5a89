import { badRequest, notFound } from '../shared/errors';
import { listObject, pageFromQuery } from '../shared/http/list';
import { ok } from '../shared/http/response';
import type { GatewayRequest, Route, Scope } from '../shared/http/types';
import { createApiKey, getKeyById, listKeys, revokeKey, toPublicKey } from '../shared/stores/keys';
import { getWorkspace } from '../shared/stores/workspaces';
import { log } from '../shared/telemetry/logger';
import { parseInput, z } from '../shared/validation';

/** Year 9999: a larger `expires_at` is almost certainly milliseconds, not seconds. */
const MAX_UNIX_SECONDS = 253_402_300_799;
const MAX_ID_LENGTH = 128;
const SCOPES = ['admin', 'gateway'] as const satisfies readonly Scope[];

const createSchema = z.strictObject({
  name: z.string().check(z.minLength(1), z.maxLength(128)),
  workspace_id: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
  scopes: z.optional(z.array(z.enum(SCOPES)).check(z.minLength(1), z.maxLength(SCOPES.length))),
  expires_at: z.optional(z.nullable(z.int().check(z.positive(), z.lte(MAX_UNIX_SECONDS, 'expected unix seconds')))),
});

/**
 * The workspace a request acts on: the caller's own, or `workspace_id` when it names a
 * workspace of the caller's organisation (by id). Anything else is a 404.
 */
async function targetWorkspace(req: GatewayRequest, workspaceId: string | undefined, param: string): Promise<string> {
  if (workspaceId === undefined || workspaceId === req.auth.workspaceId) return req.auth.workspaceId;
  const ws = workspaceId.length <= MAX_ID_LENGTH ? await getWorkspace(workspaceId) : undefined;
  if (!ws || ws.organisation_id !== req.auth.organisationId) {
    throw notFound(`No workspace '${workspaceId}' in this organisation.`, param);
  }
  return ws.id;
}

async function create(req: GatewayRequest) {
  const body = parseInput(createSchema, req.json());
  const expiresAt = body.expires_at ?? null;
  if (expiresAt !== null && expiresAt <= Math.floor(Date.now() / 1000)) {
    throw badRequest('Invalid `expires_at`: must be in the future (unix seconds).', 'expires_at', 'invalid_value');
  }
  const workspaceId = await targetWorkspace(req, body.workspace_id, 'workspace_id');
  const { record, secret } = await createApiKey({
    name: body.name,
    workspaceId,
    organisationId: req.auth.organisationId,
    scopes: [...new Set<Scope>(body.scopes ?? ['gateway'])],
    expiresAt,
  });
  log.info('api key created', { key_id: record.id, target_workspace_id: workspaceId, scopes: record.scopes, by_key_id: req.auth.keyId }, req.context);
  // The secret is returned this once; only its SHA-256 is stored.
  return ok({ ...toPublicKey(record), secret });
}

async function list(req: GatewayRequest) {
  const workspaceId = await targetWorkspace(req, req.query.workspace_id || undefined, 'workspace_id');
  const page = await listKeys(workspaceId, pageFromQuery(req.query, { order: 'asc' }));
  return ok(listObject(page.items.map(toPublicKey), page.hasMore));
}

async function findKey(req: GatewayRequest) {
  const workspaceId = await targetWorkspace(req, req.query.workspace_id || undefined, 'workspace_id');
  return { workspaceId, id: req.params.id! };
}

async function get(req: GatewayRequest) {
  const { workspaceId, id } = await findKey(req);
  const key = id.length <= MAX_ID_LENGTH ? await getKeyById(workspaceId, id) : undefined;
  if (!key) throw notFound(`No API key '${id}' in this workspace.`, 'id');
  return ok(toPublicKey(key));
}

async function revoke(req: GatewayRequest) {
  const { workspaceId, id } = await findKey(req);
  const key = id.length <= MAX_ID_LENGTH ? await revokeKey(workspaceId, id) : undefined;
  if (!key) throw notFound(`No API key '${id}' in this workspace.`, 'id');
  log.info('api key revoked', { key_id: key.id, target_workspace_id: workspaceId, by_key_id: req.auth.keyId }, req.context);
  return ok(toPublicKey(key));
}

export const apiKeyRoutes: Route[] = [
  { method: 'POST', path: '/v1/api-keys', scope: 'admin', handler: create },
  { method: 'GET', path: '/v1/api-keys', scope: 'admin', handler: list },
  { method: 'GET', path: '/v1/api-keys/{id}', scope: 'admin', handler: get },
  { method: 'DELETE', path: '/v1/api-keys/{id}', scope: 'admin', handler: revoke },
];

/** The body schema, for the OpenAPI document (infra/openapi). */
export { createSchema };
