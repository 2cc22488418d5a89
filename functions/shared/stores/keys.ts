import { ddb, tableName } from '../db/client';
import { getItem, putNew, updateItem } from '../db/ops';
import { listPage, type Page, type PageRequest } from '../db/list';
import { generateApiKey, hashApiKey } from '../auth/keys';
import type { McpAllowance, Role, Scope } from '../http/types';
import { ID_PREFIX, newId } from '../ids';
import { GSI1 } from '../tables';

export interface ApiKeyRecord {
  id: string;
  name: string;
  workspace_id: string;
  organisation_id: string;
  /** Absent on keys made before roles: functions/shared/auth/roles.ts reads their `admin` scope. */
  role?: Role;
  /** `admin` only on keys made before roles. */
  scopes: (Scope | 'admin')[];
  status: 'active' | 'revoked';
  /** Unix seconds, or null for a key that does not expire. */
  expires_at: number | null;
  created_at: number;
  revoked_at: number | null;
  /** Used when a request names no provider: a saved config's id or slug, or inline config JSON. */
  default_config?: string | null;
  /** The MCP servers and tools the key may use on /v1/mcp; null or absent: all of the workspace's. */
  allowed_mcp?: McpAllowance[] | null;
}

type KeyItem = ApiKeyRecord & { pk: string; sk: string; gsi1pk: string; gsi1sk: string };

const keyPk = (hash: string) => `KEY#${hash}`;
const workspaceKeysPartition = (workspaceId: string) => `WS#${workspaceId}#KEYS`;

/** `role`: the key's role as the gateway reads it (functions/shared/auth/roles.ts), stored or not. */
export function toPublicKey(item: ApiKeyRecord, role: Role): Omit<ApiKeyRecord, 'scopes'> & { object: 'api_key'; role: Role; scopes: Scope[] } {
  return {
    object: 'api_key',
    id: item.id,
    name: item.name,
    workspace_id: item.workspace_id,
    organisation_id: item.organisation_id,
    role,
    scopes: item.scopes.filter((scope): scope is Scope => scope === 'gateway'),
    status: item.status,
    expires_at: item.expires_at,
    created_at: item.created_at,
    revoked_at: item.revoked_at ?? null,
    default_config: item.default_config ?? null,
    allowed_mcp: item.allowed_mcp ?? null,
  };
}

export async function createApiKey(input: {
  name: string;
  workspaceId: string;
  organisationId: string;
  role: Role;
  scopes: Scope[];
  expiresAt: number | null;
  defaultConfig?: string | null;
  allowedMcp?: McpAllowance[] | null;
  /** Register a caller-chosen secret (bootstrap with GATEWAY_ADMIN_KEY); normally generated. */
  secret?: string;
}): Promise<{ record: ApiKeyRecord; secret: string }> {
  const secret = input.secret ?? generateApiKey();
  const id = newId(ID_PREFIX.apiKey);
  const record: ApiKeyRecord = {
    id,
    name: input.name,
    workspace_id: input.workspaceId,
    organisation_id: input.organisationId,
    role: input.role,
    scopes: input.scopes,
    status: 'active',
    expires_at: input.expiresAt,
    created_at: Math.floor(Date.now() / 1000),
    revoked_at: null,
    default_config: input.defaultConfig ?? null,
    allowed_mcp: input.allowedMcp ?? null,
  };
  const item: KeyItem = {
    pk: keyPk(hashApiKey(secret)),
    sk: 'KEY',
    gsi1pk: workspaceKeysPartition(input.workspaceId),
    gsi1sk: id,
    ...record,
  };
  if (!(await putNew('control', item as unknown as Record<string, unknown> & { pk: string; sk: string }))) throw new Error('API key collision');
  return { record, secret };
}

export async function findKeyBySecret(secret: string): Promise<ApiKeyRecord | undefined> {
  return getItem<KeyItem>('control', { pk: keyPk(hashApiKey(secret)), sk: 'KEY' });
}

export async function listKeys(workspaceId: string, page: PageRequest): Promise<Page<ApiKeyRecord>> {
  return listPage<KeyItem>({ table: 'control', index: 'gsi1', partition: workspaceKeysPartition(workspaceId), prefix: '' }, page);
}

export async function getKeyById(workspaceId: string, keyId: string): Promise<KeyItem | undefined> {
  const out = await ddb.query({
    TableName: tableName('control'),
    IndexName: GSI1,
    KeyConditionExpression: 'gsi1pk = :pk AND gsi1sk = :sk',
    ExpressionAttributeValues: { ':pk': workspaceKeysPartition(workspaceId), ':sk': keyId },
  });
  return out.Items?.[0] as KeyItem | undefined;
}

/** Revoke (idempotent): an already revoked key is returned unchanged. */
export async function revokeKey(workspaceId: string, keyId: string): Promise<ApiKeyRecord | undefined> {
  const found = await getKeyById(workspaceId, keyId);
  if (!found) return undefined;
  const updated = await updateItem<KeyItem>(
    'control',
    { pk: found.pk, sk: found.sk },
    {
      set: { status: 'revoked', revoked_at: Math.floor(Date.now() / 1000) },
      condition: 'attribute_exists(pk) AND #status = :active',
      conditionValues: { ':active': 'active' },
    },
  );
  return updated ?? (await getItem<KeyItem>('control', { pk: found.pk, sk: found.sk }, true));
}

/** Change a key's name, role, default config or MCP allow-list; a revoked key cannot be changed. */
export async function updateKey(
  workspaceId: string,
  keyId: string,
  changes: { name?: string; role?: Role; default_config?: string | null; allowed_mcp?: McpAllowance[] | null },
): Promise<{ key?: ApiKeyRecord; revoked?: true }> {
  const found = await getKeyById(workspaceId, keyId);
  if (!found) return {};
  if (found.status !== 'active') return { revoked: true };
  const updated = await updateItem<KeyItem>(
    'control',
    { pk: found.pk, sk: found.sk },
    {
      set: changes,
      condition: 'attribute_exists(pk) AND #status = :active',
      conditionValues: { ':active': 'active' },
    },
  );
  return updated ? { key: updated } : { revoked: true };
}
