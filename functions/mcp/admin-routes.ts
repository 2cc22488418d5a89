import { config } from '../shared/config';
import { badRequest, notFound } from '../shared/errors';
import { idempotency } from '../shared/http/idempotency';
import { listObject, pageFromQuery } from '../shared/http/list';
import { ok } from '../shared/http/response';
import type { GatewayRequest, Route } from '../shared/http/types';
import { assertSafeUrl } from '../shared/net/ssrf';
import { log } from '../shared/telemetry/logger';
import { parseInput, z } from '../shared/validation';
import {
  createMcpServer,
  deleteMcpServer,
  getMcpServer,
  listMcpServers,
  MCP_SERVER_SLUG,
  toPublicMcpServer,
  updateMcpServer,
  type McpAuth,
  type McpSecrets,
} from './store';

/** MCP servers as workspace objects: `/v1/mcp-servers`. Secrets go in, only names come out. */

export const DEFAULT_MCP_TIMEOUT_MS = 30_000;
export const MAX_MCP_TIMEOUT_MS = 300_000;

const slug = z.string().check(z.regex(MCP_SERVER_SLUG, 'expected 1-64 lower-case letters, digits and dashes, starting with a letter or digit'));
const text = (max: number) => z.string().check(z.minLength(1), z.maxLength(max));
const httpUrl = z.string().check(z.maxLength(2048));
/** MCP tool names: 1-128 of letters, digits, `_`, `-` and `.`. */
const toolName = z.string().check(z.regex(/^[A-Za-z0-9_.-]{1,128}$/, 'expected an MCP tool name (1-128 letters, digits, `_`, `-`, `.`)'));
const headerName = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/;
const FORBIDDEN_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'accept',
  'mcp-session-id',
  'mcp-protocol-version',
  'connection',
  'transfer-encoding',
]);

const authSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('none') }),
  z.strictObject({
    type: z.literal('headers'),
    headers: z.record(
      z.string().check(
        z.regex(headerName, 'expected an HTTP header name'),
        z.refine((h) => !FORBIDDEN_HEADERS.has(h.toLowerCase()), 'the gateway sets this header itself'),
      ),
      text(8192),
    ),
  }),
  z.strictObject({
    type: z.literal('oauth_client_credentials'),
    token_url: httpUrl,
    client_id: text(512),
    client_secret: text(4096),
    scope: z.optional(z.nullable(text(1024))),
  }),
]);

const common = {
  description: z.optional(z.nullable(text(1024))),
  allowed_tools: z.optional(z.nullable(z.array(toolName).check(z.maxLength(512)))),
  timeout_ms: z.optional(z.number().check(z.int(), z.gte(100), z.lte(MAX_MCP_TIMEOUT_MS))),
  auth: z.optional(authSchema),
};
const createSchema = z.strictObject({ slug, url: httpUrl, ...common });
const updateSchema = z.strictObject({ url: z.optional(httpUrl), ...common });

type AuthInput = z.infer<typeof authSchema>;

/** The SSRF rules of custom hosts (GATEWAY_TRUSTED_HOSTS included), checked when the server is saved and again at each call. */
function vetUrl(url: string, param: string): string {
  return assertSafeUrl(url, { trustedHosts: config().trustedHosts, param }).toString();
}

function splitAuth(input: AuthInput | undefined): { auth: McpAuth; secrets: McpSecrets } {
  if (!input || input.type === 'none') return { auth: { type: 'none' }, secrets: {} };
  if (input.type === 'headers') {
    if (Object.keys(input.headers).length === 0) throw badRequest('Invalid `auth.headers`: name at least one header.', 'auth.headers', 'invalid_value');
    return { auth: { type: 'headers', header_names: Object.keys(input.headers) }, secrets: { headers: input.headers } };
  }
  return {
    auth: { type: 'oauth_client_credentials', token_url: vetUrl(input.token_url, 'auth.token_url'), client_id: input.client_id, scope: input.scope ?? null },
    secrets: { client_secret: input.client_secret },
  };
}

function slugParam(req: GatewayRequest): string {
  const value = req.params.slug!;
  if (!MCP_SERVER_SLUG.test(value)) throw notFound(`No MCP server '${value.slice(0, 64)}' in this workspace.`, 'slug');
  return value;
}

async function create(req: GatewayRequest) {
  const body = parseInput(createSchema, req.json());
  const url = vetUrl(body.url, 'url');
  const { auth, secrets } = splitAuth(body.auth);
  const created = await createMcpServer(req.auth.workspaceId, {
    slug: body.slug,
    url,
    description: body.description ?? null,
    allowed_tools: body.allowed_tools ?? null,
    timeout_ms: body.timeout_ms ?? DEFAULT_MCP_TIMEOUT_MS,
    auth,
    secrets,
  });
  log.info('mcp server created', { slug: created.slug, auth: auth.type }, req.context);
  return ok(toPublicMcpServer(created));
}

async function list(req: GatewayRequest) {
  const page = await listMcpServers(req.auth.workspaceId, pageFromQuery(req.query, { order: 'asc' }));
  return ok(listObject(page.items.map(toPublicMcpServer), page.hasMore));
}

async function get(req: GatewayRequest) {
  const s = slugParam(req);
  const found = await getMcpServer(req.auth.workspaceId, s);
  if (!found) throw notFound(`No MCP server '${s}' in this workspace.`, 'slug');
  return ok(toPublicMcpServer(found));
}

async function update(req: GatewayRequest) {
  const s = slugParam(req);
  const body = parseInput(updateSchema, req.json());
  if (Object.keys(body).length === 0) throw badRequest('Nothing to update: send at least one field.', null, 'invalid_value');
  const updated = await updateMcpServer(req.auth.workspaceId, s, {
    url: body.url === undefined ? undefined : vetUrl(body.url, 'url'),
    description: body.description,
    allowed_tools: body.allowed_tools,
    timeout_ms: body.timeout_ms,
    auth: body.auth ? splitAuth(body.auth) : undefined,
  });
  if (!updated) throw notFound(`No MCP server '${s}' in this workspace.`, 'slug');
  log.info('mcp server updated', { slug: s }, req.context);
  return ok(toPublicMcpServer(updated));
}

async function remove(req: GatewayRequest) {
  const s = slugParam(req);
  const deleted = await deleteMcpServer(req.auth.workspaceId, s);
  if (!deleted) throw notFound(`No MCP server '${s}' in this workspace.`, 'slug');
  log.info('mcp server deleted', { slug: s }, req.context);
  return ok({ object: 'mcp_server.deleted', id: deleted.id, slug: deleted.slug, deleted: true });
}

export const mcpServerRoutes: Route[] = [
  { method: 'POST', path: '/v1/mcp-servers', access: 'workspace-admin', use: [idempotency], handler: create },
  { method: 'GET', path: '/v1/mcp-servers', access: 'viewer', handler: list },
  { method: 'GET', path: '/v1/mcp-servers/{slug}', access: 'viewer', handler: get },
  { method: 'PATCH', path: '/v1/mcp-servers/{slug}', access: 'workspace-admin', handler: update },
  { method: 'DELETE', path: '/v1/mcp-servers/{slug}', access: 'workspace-admin', handler: remove },
];

/** The body schemas, for the OpenAPI document (infra/openapi). */
export { createSchema as mcpServerCreateSchema, updateSchema as mcpServerUpdateSchema };
