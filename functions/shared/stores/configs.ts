import { parseGatewayConfig } from '../gateway-config';
import { config as gatewayConfig } from '../config';
import { tableName } from '../db/client';
import { getItem, transactWrite, updateItem } from '../db/ops';
import { createWithUniqueSlug } from '../db/slug-claim';
import { listPage, type Page, type PageRequest } from '../db/list';
import { badRequest } from '../errors';
import { ID_PREFIX, newId } from '../ids';
import { WorkspaceCache } from './ttl-cache';
import { slugify } from './workspaces';

/**
 * Saved configs: a named gateway config (routing, retries, cache, ...) that callers
 * reference with `x-gateway-config: <id or slug>`. Ids are `pc-` + a time-ordered id;
 * slugs are unique per workspace (a claim item guards them). The config body is stored
 * as JSON text, so any JSON round-trips exactly (DynamoDB maps limit depth and numbers).
 */

export const MAX_CONFIG_BYTES = 64 * 1024;
/** Longest id or slug a lookup accepts; a longer reference cannot exist. */
export const MAX_CONFIG_REF_LENGTH = 128;

export interface SavedConfig {
  object: 'config';
  id: string;
  slug: string;
  name: string;
  workspace_id: string;
  config: Record<string, unknown>;
  created_at: number;
  updated_at: number;
}

interface ConfigItem {
  pk: string;
  sk: string;
  id: string;
  slug: string;
  name: string;
  workspace_id: string;
  config_json: string;
  created_at: number;
  updated_at: number;
}

const now = () => Math.floor(Date.now() / 1000);
const workspacePk = (workspaceId: string) => `WS#${workspaceId}`;
const CONFIG_PREFIX = 'CONFIG#';
const configKey = (workspaceId: string, id: string) => ({ pk: workspacePk(workspaceId), sk: CONFIG_PREFIX + id });
const slugKey = (workspaceId: string, slug: string) => ({ pk: workspacePk(workspaceId), sk: `CFGSLUG#${slug}` });

/** Does this reference look like a config id (rather than a slug)? Slugs may not start with `pc-`. */
export const isConfigId = (ref: string) => ref.startsWith(ID_PREFIX.config);

/**
 * Shape check for a gateway config: a JSON object of at most 64 KB. Throws a 400 naming
 * `config`. Placeholder: the routing issue replaces it with the full config schema.
 */
export function validateGatewayConfig(config: unknown): void {
  if (config === undefined) throw badRequest('Invalid `config`: required; expected a JSON object.', 'config', 'invalid_value');
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    const got = config === null ? 'null' : Array.isArray(config) ? 'array' : typeof config;
    throw badRequest(`Invalid \`config\`: expected a JSON object, received ${got}.`, 'config', 'invalid_value');
  }
  const bytes = Buffer.byteLength(JSON.stringify(config), 'utf8');
  if (bytes > MAX_CONFIG_BYTES) {
    throw badRequest(`Invalid \`config\`: ${bytes} bytes exceeds the limit of ${MAX_CONFIG_BYTES} bytes.`, 'config', 'too_large');
  }
  // The same schema the data plane applies to x-gateway-config: a saved config that would
  // fail at request time is refused when it is saved.
  parseGatewayConfig(config, 'config');
}

function fromItem(item: ConfigItem): SavedConfig {
  return {
    object: 'config',
    id: item.id,
    slug: item.slug,
    name: item.name,
    workspace_id: item.workspace_id,
    config: JSON.parse(item.config_json) as Record<string, unknown>,
    created_at: item.created_at,
    updated_at: item.updated_at,
  };
}

// ---- data-plane read path -------------------------------------------------------------

const cache = new WorkspaceCache<SavedConfig>(() => gatewayConfig().controlCacheTtlMs);

const forget = (c: { workspace_id: string; id: string; slug: string }) => cache.forget(c.workspace_id, c.id, c.slug);

/**
 * A saved config by id or slug, for the data plane. Cached per container for
 * CONTROL_CACHE_TTL_MS (no DynamoDB call on the warm path); updates and deletes in this
 * container take effect at once, elsewhere within the TTL.
 */
export function resolveSavedConfig(workspaceId: string, idOrSlug: string): Promise<SavedConfig | undefined> {
  if (!idOrSlug || idOrSlug.length > MAX_CONFIG_REF_LENGTH) return Promise.resolve(undefined);
  return cache.get(workspaceId, idOrSlug, () => findConfigItem(workspaceId, idOrSlug, false).then((i) => i && fromItem(i)));
}

export function clearConfigCache(): void {
  cache.clear();
}

// ---- control-plane CRUD ---------------------------------------------------------------

async function findConfigItem(workspaceId: string, ref: string, consistent: boolean): Promise<ConfigItem | undefined> {
  if (!ref || ref.length > MAX_CONFIG_REF_LENGTH) return undefined;
  if (isConfigId(ref)) return getItem<ConfigItem>('control', configKey(workspaceId, ref), consistent);
  const claim = await getItem<{ config_id: string }>('control', slugKey(workspaceId, ref), consistent);
  return claim ? getItem<ConfigItem>('control', configKey(workspaceId, claim.config_id), consistent) : undefined;
}

export async function getConfig(workspaceId: string, idOrSlug: string): Promise<SavedConfig | undefined> {
  const item = await findConfigItem(workspaceId, idOrSlug, true);
  return item ? fromItem(item) : undefined;
}

export async function listConfigs(workspaceId: string, page: PageRequest): Promise<Page<SavedConfig>> {
  const result = await listPage<ConfigItem>({ table: 'control', partition: workspacePk(workspaceId), prefix: CONFIG_PREFIX }, page);
  return { items: result.items.map(fromItem), hasMore: result.hasMore };
}

/** A default slug from the name; never shaped like a config id. */
function slugFromName(name: string): string {
  const slug = slugify(name);
  return isConfigId(slug) ? `config-${slug}`.slice(0, 64) : slug;
}

/**
 * Create. A given slug that is taken is a 409; without one the slug comes from the name,
 * with a short suffix from the id when that is taken.
 */
export async function createConfig(workspaceId: string, input: { name: string; slug?: string; config: Record<string, unknown> }): Promise<SavedConfig> {
  const id = newId(ID_PREFIX.config);
  const base = input.slug ?? slugFromName(input.name);
  return createWithUniqueSlug({
    what: 'config',
    slug: base,
    chosen: input.slug !== undefined,
    id,
    write: async (slug) => (await tryCreate(workspaceId, id, { ...input, slug })) ?? 'taken',
  });
}

async function tryCreate(
  workspaceId: string,
  id: string,
  input: { name: string; slug: string; config: Record<string, unknown> },
): Promise<SavedConfig | undefined> {
  const ts = now();
  const item: ConfigItem = {
    ...configKey(workspaceId, id),
    id,
    slug: input.slug,
    name: input.name,
    workspace_id: workspaceId,
    config_json: JSON.stringify(input.config),
    created_at: ts,
    updated_at: ts,
  };
  const table = tableName('control');
  const written = await transactWrite([
    {
      Put: {
        TableName: table,
        Item: { ...slugKey(workspaceId, input.slug), config_id: id },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
    { Put: { TableName: table, Item: item, ConditionExpression: 'attribute_not_exists(pk)' } },
  ]);
  if (!written) return undefined;
  forget(item);
  return fromItem(item);
}

/** Update name and/or config; undefined when there is no such config. */
export async function updateConfig(
  workspaceId: string,
  idOrSlug: string,
  patch: { name?: string; config?: Record<string, unknown> },
): Promise<SavedConfig | undefined> {
  const found = await findConfigItem(workspaceId, idOrSlug, true);
  if (!found) return undefined;
  const updated = await updateItem<ConfigItem>('control', configKey(workspaceId, found.id), {
    set: {
      name: patch.name,
      config_json: patch.config === undefined ? undefined : JSON.stringify(patch.config),
      updated_at: now(),
    },
    condition: 'attribute_exists(pk)',
  });
  forget(found);
  return updated ? fromItem(updated) : undefined;
}

/** Delete the config and its slug claim; returns what was deleted. */
export async function deleteConfig(workspaceId: string, idOrSlug: string): Promise<SavedConfig | undefined> {
  const found = await findConfigItem(workspaceId, idOrSlug, true);
  if (!found) return undefined;
  const table = tableName('control');
  const deleted = await transactWrite([
    { Delete: { TableName: table, Key: configKey(workspaceId, found.id), ConditionExpression: 'attribute_exists(pk)' } },
    { Delete: { TableName: table, Key: slugKey(workspaceId, found.slug) } },
  ]);
  forget(found);
  return deleted ? fromItem(found) : undefined;
}
