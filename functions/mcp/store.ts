import { openJson, sealJson, type EncryptionContext, type Envelope } from '../shared/crypto/envelope';
import { listPage, type Page, type PageRequest } from '../shared/db/list';
import { deleteItem, getItem, putNew, updateItem } from '../shared/db/ops';
import { alreadyExists, conflict } from '../shared/errors';
import { uuid } from '../shared/ids';
import { config } from '../shared/config';
import { WorkspaceCache } from '../shared/stores/ttl-cache';

/**
 * MCP servers registered in a workspace (`/v1/mcp-servers`). Header values and OAuth client
 * secrets are envelope-encrypted like managed-provider credentials, bound to the context
 * {workspace_id, slug, object: mcp_server}; only header names and `has_client_secret` leave
 * this module through the API.
 */

export const MCP_SERVER_SLUG = /^[a-z0-9][a-z0-9-]{0,63}$/;

export type McpAuth =
  | { type: 'none' }
  | { type: 'headers'; header_names: string[] }
  | { type: 'oauth_client_credentials'; token_url: string; client_id: string; scope: string | null };

export interface McpServerRecord {
  id: string;
  slug: string;
  workspace_id: string;
  url: string;
  description: string | null;
  allowed_tools: string[] | null;
  timeout_ms: number;
  auth: McpAuth;
  version: number;
  created_at: number;
  updated_at: number;
}

/** What is sealed: the header values, or the OAuth client secret. */
export interface McpSecrets {
  headers?: Record<string, string>;
  client_secret?: string;
}

export interface McpServerWithSecrets extends McpServerRecord {
  secrets: McpSecrets;
}

type McpItem = McpServerRecord & { pk: string; sk: string; gsi1pk: string; gsi1sk: string; secrets?: Envelope };

const now = () => Math.floor(Date.now() / 1000);
const serverKey = (workspaceId: string, slug: string) => ({ pk: `WS#${workspaceId}`, sk: `MCPSERVER#${slug}` });
const listPartition = (workspaceId: string) => `WS#${workspaceId}#MCPSERVERS`;
const encryptionContext = (workspaceId: string, slug: string): EncryptionContext => ({ workspace_id: workspaceId, slug, object: 'mcp_server' });

function fromItem(item: McpItem): McpServerRecord {
  const { pk: _pk, sk: _sk, gsi1pk: _g1, gsi1sk: _g2, secrets: _s, ...rest } = item;
  return rest;
}

export function toPublicMcpServer(s: McpServerRecord) {
  return {
    object: 'mcp_server' as const,
    id: s.id,
    slug: s.slug,
    workspace_id: s.workspace_id,
    url: s.url,
    description: s.description,
    allowed_tools: s.allowed_tools,
    timeout_ms: s.timeout_ms,
    auth: s.auth.type === 'oauth_client_credentials' ? { ...s.auth, has_client_secret: true } : s.auth,
    created_at: s.created_at,
    updated_at: s.updated_at,
  };
}

const hasSecrets = (secrets: McpSecrets) => secrets.client_secret !== undefined || Object.keys(secrets.headers ?? {}).length > 0;

async function seal(workspaceId: string, slug: string, secrets: McpSecrets): Promise<Envelope | undefined> {
  return hasSecrets(secrets) ? sealJson(secrets, encryptionContext(workspaceId, slug)) : undefined;
}

async function unseal(item: McpItem): Promise<McpSecrets> {
  return item.secrets ? openJson<McpSecrets>(item.secrets, encryptionContext(item.workspace_id, item.slug)) : {};
}

export interface McpServerInput {
  slug: string;
  url: string;
  description: string | null;
  allowed_tools: string[] | null;
  timeout_ms: number;
  auth: McpAuth;
  secrets: McpSecrets;
}

export async function createMcpServer(workspaceId: string, input: McpServerInput): Promise<McpServerRecord> {
  const ts = now();
  const { secrets, ...fields } = input;
  const record: McpServerRecord = { id: `mcp_${uuid()}`, workspace_id: workspaceId, ...fields, version: 1, created_at: ts, updated_at: ts };
  const envelope = await seal(workspaceId, input.slug, secrets);
  const item: McpItem = {
    ...serverKey(workspaceId, input.slug),
    gsi1pk: listPartition(workspaceId),
    gsi1sk: record.id,
    ...record,
    ...(envelope ? { secrets: envelope } : {}),
  };
  if (!(await putNew('control', item as McpItem & Record<string, unknown>))) {
    throw alreadyExists(`An MCP server with slug '${input.slug}' already exists in this workspace.`, 'slug_taken');
  }
  forget(workspaceId, input.slug);
  return record;
}

export async function getMcpServer(workspaceId: string, slug: string): Promise<McpServerRecord | undefined> {
  if (!MCP_SERVER_SLUG.test(slug)) return undefined;
  const item = await getItem<McpItem>('control', serverKey(workspaceId, slug), true);
  return item ? fromItem(item) : undefined;
}

// ---- data-plane read path: cached per container for CONTROL_CACHE_TTL_MS (no DynamoDB or
// KMS call on a warm request); writes in this container take effect at once, elsewhere
// within the TTL, as for managed providers.

const servers = new WorkspaceCache<McpServerWithSecrets>(() => config().controlCacheTtlMs);
const workspaceLists = new WorkspaceCache<McpServerWithSecrets[]>(() => config().controlCacheTtlMs);
/** The name the whole-workspace list is cached under (not a valid slug). */
const ALL = '*';

function forget(workspaceId: string, slug: string): void {
  servers.forget(workspaceId, slug);
  workspaceLists.forget(workspaceId, ALL);
}

/** The server with its decrypted secrets, for the MCP data plane. */
export function resolveMcpServer(workspaceId: string, slug: string): Promise<McpServerWithSecrets | undefined> {
  if (!MCP_SERVER_SLUG.test(slug)) return Promise.resolve(undefined);
  return servers.get(workspaceId, slug, async () => {
    const item = await getItem<McpItem>('control', serverKey(workspaceId, slug));
    return item ? { ...fromItem(item), secrets: await unseal(item) } : undefined;
  });
}

export async function listMcpServers(workspaceId: string, page: PageRequest): Promise<Page<McpServerRecord>> {
  const result = await listPage<McpItem>({ table: 'control', index: 'gsi1', partition: listPartition(workspaceId), prefix: '' }, page);
  return { items: result.items.map(fromItem), hasMore: result.hasMore };
}

/** Every server of the workspace (the aggregated `/v1/mcp` endpoint), at most `max`. */
export async function allMcpServers(workspaceId: string, max: number): Promise<McpServerWithSecrets[]> {
  const found = await workspaceLists.get(workspaceId, ALL, async () => {
    const page = await listMcpServers(workspaceId, { limit: max, order: 'asc' });
    const resolved = await Promise.all(page.items.map((s) => resolveMcpServer(workspaceId, s.slug)));
    return resolved.filter((s): s is McpServerWithSecrets => s !== undefined);
  });
  return found ?? [];
}

export interface McpServerPatch {
  url?: string;
  description?: string | null;
  allowed_tools?: string[] | null;
  timeout_ms?: number;
  /** A new auth replaces the old one with its secrets. */
  auth?: { auth: McpAuth; secrets: McpSecrets };
}

/** Apply a patch, conditional on the version read (409 on a concurrent update); undefined when absent. */
export async function updateMcpServer(workspaceId: string, slug: string, patch: McpServerPatch): Promise<McpServerRecord | undefined> {
  const key = serverKey(workspaceId, slug);
  const item = await getItem<McpItem>('control', key, true);
  if (!item) return undefined;
  const set: Record<string, unknown> = { version: item.version + 1, updated_at: now() };
  const remove: string[] = [];
  for (const field of ['url', 'description', 'allowed_tools', 'timeout_ms'] as const) {
    if (patch[field] !== undefined) set[field] = patch[field];
  }
  if (patch.auth) {
    set.auth = patch.auth.auth;
    const envelope = await seal(workspaceId, slug, patch.auth.secrets);
    if (envelope) set.secrets = envelope;
    else remove.push('secrets');
  }
  const updated = await updateItem<McpItem>('control', key, {
    set,
    remove,
    condition: 'attribute_exists(pk) AND #version = :expected',
    conditionValues: { ':expected': item.version },
  });
  forget(workspaceId, slug);
  if (updated) return fromItem(updated);
  if (!(await getItem('control', key, true))) return undefined;
  throw conflict(`MCP server '${slug}' was changed by another request; read it again and retry.`, 'concurrent_update');
}

export async function deleteMcpServer(workspaceId: string, slug: string): Promise<McpServerRecord | undefined> {
  const key = serverKey(workspaceId, slug);
  const item = await getItem<McpItem>('control', key, true);
  const deleted = item ? await deleteItem('control', key, 'attribute_exists(pk)') : false;
  forget(workspaceId, slug);
  return item && deleted ? fromItem(item) : undefined;
}
