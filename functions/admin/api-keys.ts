import { badRequest, notFound } from '../shared/errors';
import { listObject, pageFromQuery } from '../shared/http/list';
import { ok } from '../shared/http/response';
import type { GatewayRequest, Role, Route, Scope } from '../shared/http/types';
import { atLeast, insufficientRole, ROLES, roleOf } from '../shared/auth/roles';
import { parseGatewayConfig } from '../shared/gateway-config';
import { resolveSavedConfig } from '../shared/stores/configs';
import { type ApiKeyRecord, createApiKey, getKeyById, listKeys, revokeKey, toPublicKey, updateKey } from '../shared/stores/keys';
import { getWorkspace } from '../shared/stores/workspaces';
import { log } from '../shared/telemetry/logger';
import { parseInput, z } from '../shared/validation';
import { idempotency } from '../shared/http/idempotency';

/** Year 9999: a larger `expires_at` is almost certainly milliseconds, not seconds. */
const MAX_UNIX_SECONDS = 253_402_300_799;
const MAX_ID_LENGTH = 128;
/** `admin` is accepted from callers written before roles: without `role`, it asks for `workspace-admin`. */
const SCOPES = ['admin', 'gateway'] as const;

/** A saved config's id or slug, or a config object; null clears it. */
const defaultConfigSchema = z.optional(z.nullable(z.union([z.string().check(z.minLength(1), z.maxLength(128)), z.looseObject({})])));

/** At most this many servers in a key's MCP allow-list, and tools per server. */
const MAX_MCP_ALLOWANCES = 100;
const MAX_MCP_TOOLS = 200;
/** A registered MCP server's slug (functions/mcp/store.ts). */
const MCP_SLUG = /^[a-z0-9][a-z0-9-]{0,63}$/;

/**
 * The MCP servers (and, per server, tools) the key may list and call on /v1/mcp; null or
 * absent: every server and tool of the workspace (each server's own allowed_tools apply too).
 */
const allowedMcpSchema = z.optional(
  z.nullable(
    z
      .array(
        z.strictObject({
          server: z.string().check(z.regex(MCP_SLUG, 'expected an MCP server slug (lower-case letters, digits and dashes)')),
          tools: z.optional(z.nullable(z.array(z.string().check(z.minLength(1), z.maxLength(128))).check(z.maxLength(MAX_MCP_TOOLS)))),
        }),
      )
      .check(z.maxLength(MAX_MCP_ALLOWANCES)),
  ),
);

const createSchema = z.strictObject({
  name: z.string().check(z.minLength(1), z.maxLength(128)),
  workspace_id: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
  role: z.optional(z.enum(ROLES)),
  scopes: z.optional(z.array(z.enum(SCOPES)).check(z.maxLength(SCOPES.length))),
  expires_at: z.optional(z.nullable(z.int().check(z.positive(), z.lte(MAX_UNIX_SECONDS, 'expected unix seconds')))),
  default_config: defaultConfigSchema,
  allowed_mcp: allowedMcpSchema,
});

const updateSchema = z.strictObject({
  name: z.optional(z.string().check(z.minLength(1), z.maxLength(128))),
  role: z.optional(z.enum(ROLES)),
  default_config: defaultConfigSchema,
  allowed_mcp: allowedMcpSchema,
});

/** A server named twice would make the allow-list ambiguous: 400 naming the second. */
function checkAllowedMcp<T extends { server: string }>(entries: T[] | null | undefined): T[] | null | undefined {
  const seen = new Set<string>();
  entries?.forEach((entry, i) => {
    if (seen.has(entry.server)) {
      throw badRequest(`Invalid \`allowed_mcp[${i}].server\`: '${entry.server}' is listed twice.`, `allowed_mcp[${i}].server`, 'invalid_value');
    }
    seen.add(entry.server);
  });
  return entries;
}

/**
 * A key's default config as stored: a saved config reference must exist in the key's
 * workspace now (it is re-read on use, so later edits to it apply); an inline config is
 * validated like `x-gateway-config` and kept as JSON.
 */
async function storedDefaultConfig(value: string | Record<string, unknown> | null | undefined, workspaceId: string): Promise<string | null | undefined> {
  if (value === undefined || value === null) return value;
  if (typeof value === 'object') return JSON.stringify(parseGatewayConfig(value, 'default_config'));
  if (!(await resolveSavedConfig(workspaceId, value))) {
    throw badRequest(`No saved config '${value}' in the key's workspace.`, 'default_config', 'config_not_found');
  }
  return value;
}

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

const publicKey = async (record: ApiKeyRecord) => toPublicKey(record, await roleOf(record));

/**
 * The new key's role and scopes: `role`, or `workspace-admin` for the old `admin` scope,
 * or `member`; the `gateway` scope when asked for, or by default for a role that may use it.
 * No key grants a role above its own.
 */
function grant(req: GatewayRequest, body: { role?: Role; scopes?: (Scope | 'admin')[] }): { role: Role; scopes: Scope[] } {
  if (body.role && body.scopes?.includes('admin')) {
    throw badRequest(
      'Invalid `scopes`: send `role` or the old `admin` scope, not both (`admin` now reads as `role: "workspace-admin"`).',
      'scopes',
      'invalid_value',
    );
  }
  const role = body.role ?? (body.scopes?.includes('admin') ? 'workspace-admin' : 'member');
  if (!atLeast(req.auth.role, role)) {
    throw insufficientRole(`A \`${req.auth.role}\` key cannot create a \`${role}\` key: a key grants at most its own role.`, 'role');
  }
  const gateway = body.scopes ? body.scopes.includes('gateway') : role !== 'viewer';
  return { role, scopes: gateway ? ['gateway'] : [] };
}

/** A key may change or revoke keys of its own role or lower only. */
async function assertOutranks(req: GatewayRequest, workspaceId: string, id: string): Promise<void> {
  const target = id.length <= MAX_ID_LENGTH ? await getKeyById(workspaceId, id) : undefined;
  if (!target) return;
  const role = await roleOf(target);
  if (!atLeast(req.auth.role, role)) {
    throw insufficientRole(`API key '${id}' is a \`${role}\`: a \`${req.auth.role}\` key cannot change or revoke it.`, 'id');
  }
}

async function create(req: GatewayRequest) {
  const body = parseInput(createSchema, req.json());
  const granted = grant(req, body);
  const expiresAt = body.expires_at ?? null;
  if (expiresAt !== null && expiresAt <= Math.floor(Date.now() / 1000)) {
    throw badRequest('Invalid `expires_at`: must be in the future (unix seconds).', 'expires_at', 'invalid_value');
  }
  const workspaceId = await targetWorkspace(req, body.workspace_id, 'workspace_id');
  const { record, secret } = await createApiKey({
    name: body.name,
    workspaceId,
    organisationId: req.auth.organisationId,
    ...granted,
    expiresAt,
    defaultConfig: await storedDefaultConfig(body.default_config, workspaceId),
    allowedMcp: checkAllowedMcp(body.allowed_mcp),
  });
  log.info(
    'api key created',
    { key_id: record.id, target_workspace_id: workspaceId, role: granted.role, scopes: record.scopes, by_key_id: req.auth.keyId },
    req.context,
  );
  // The secret is returned this once; only its SHA-256 is stored.
  return ok({ ...(await publicKey(record)), secret });
}

async function list(req: GatewayRequest) {
  const workspaceId = await targetWorkspace(req, req.query.workspace_id || undefined, 'workspace_id');
  const page = await listKeys(workspaceId, pageFromQuery(req.query, { order: 'asc' }));
  return ok(listObject(await Promise.all(page.items.map(publicKey)), page.hasMore));
}

async function findKey(req: GatewayRequest) {
  const workspaceId = await targetWorkspace(req, req.query.workspace_id || undefined, 'workspace_id');
  return { workspaceId, id: req.params.id! };
}

async function get(req: GatewayRequest) {
  const { workspaceId, id } = await findKey(req);
  const key = id.length <= MAX_ID_LENGTH ? await getKeyById(workspaceId, id) : undefined;
  if (!key) throw notFound(`No API key '${id}' in this workspace.`, 'id');
  return ok(await publicKey(key));
}

async function update(req: GatewayRequest) {
  const { workspaceId, id } = await findKey(req);
  const body = parseInput(updateSchema, req.json());
  await assertOutranks(req, workspaceId, id);
  if (body.role && !atLeast(req.auth.role, body.role)) {
    throw insufficientRole(`A \`${req.auth.role}\` key cannot make a key \`${body.role}\`: a key grants at most its own role.`, 'role');
  }
  const changes = {
    name: body.name,
    role: body.role,
    default_config: await storedDefaultConfig(body.default_config, workspaceId),
    allowed_mcp: checkAllowedMcp(body.allowed_mcp),
  };
  const out = id.length <= MAX_ID_LENGTH ? await updateKey(workspaceId, id, changes) : {};
  if (out.revoked) throw badRequest(`API key '${id}' is revoked and cannot be changed.`, 'id', 'revoked_api_key');
  if (!out.key) throw notFound(`No API key '${id}' in this workspace.`, 'id');
  log.info('api key updated', { key_id: id, target_workspace_id: workspaceId, fields: Object.keys(body), by_key_id: req.auth.keyId }, req.context);
  return ok(await publicKey(out.key));
}

async function revoke(req: GatewayRequest) {
  const { workspaceId, id } = await findKey(req);
  await assertOutranks(req, workspaceId, id);
  const key = id.length <= MAX_ID_LENGTH ? await revokeKey(workspaceId, id) : undefined;
  if (!key) throw notFound(`No API key '${id}' in this workspace.`, 'id');
  log.info('api key revoked', { key_id: key.id, target_workspace_id: workspaceId, by_key_id: req.auth.keyId }, req.context);
  return ok(await publicKey(key));
}

export const apiKeyRoutes: Route[] = [
  { method: 'POST', path: '/v1/api-keys', access: 'workspace-admin', use: [idempotency], handler: create },
  { method: 'GET', path: '/v1/api-keys', access: 'viewer', handler: list },
  { method: 'GET', path: '/v1/api-keys/{id}', access: 'viewer', handler: get },
  { method: 'PUT', path: '/v1/api-keys/{id}', access: 'workspace-admin', handler: update },
  { method: 'DELETE', path: '/v1/api-keys/{id}', access: 'workspace-admin', handler: revoke },
];

/** The body schema, for the OpenAPI document (infra/openapi). */
export { createSchema, updateSchema };
