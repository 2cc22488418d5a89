import { config } from '../shared/config';
import { tableName } from '../shared/db/client';
import { buildUpdate, deleteItem, getItem, queryAll, transactWrite } from '../shared/db/ops';
import { createWithUniqueSlug } from '../shared/db/slug-claim';
import { listPage, type Page, type PageRequest } from '../shared/db/list';
import { conflict } from '../shared/errors';
import { timeOrderedId } from '../shared/ids';
import { WorkspaceCache } from '../shared/stores/ttl-cache';
import { slugify } from '../shared/stores/workspaces';
import type { GuardrailDefinition } from './types';

/**
 * Guardrails, versioned. Per workspace partition
 * `WS#<workspace>`:
 *   `GR#<id>`              the guardrail: name, slug, the latest version (id, number, definition)
 *   `GRV#<id>#<000001>`    one immutable item per version (written once, never changed)
 *   `GRSLUG#<slug>`        the slug claim that keeps slugs unique in the workspace
 * Ids are `grd_` + a time-ordered id (list order = creation order); a slug never holds
 * `_`, so an id and a slug cannot be confused. Every write is conditional: creating claims
 * the slug and the id in one transaction; an update moves the pointer from version n to
 * n+1 only if it still is at n, together with writing version n+1.
 * Definitions are stored as JSON text so any parameter JSON round-trips exactly.
 */

export const GUARDRAIL_ID_PREFIX = 'grd_';
export const VERSION_ID_PREFIX = 'grv_';

export interface Guardrail extends GuardrailDefinition {
  object: 'guardrail';
  id: string;
  slug: string;
  name: string;
  workspace_id: string;
  organisation_id: string;
  version_id: string;
  /** 1 for the creation, +1 for every update. */
  version: number;
  created_at: number;
  updated_at: number;
}

export interface GuardrailVersion extends GuardrailDefinition {
  object: 'guardrail.version';
  id: string;
  guardrail_id: string;
  version: number;
  name: string;
  created_at: number;
}

interface GuardrailItem {
  pk: string;
  sk: string;
  id: string;
  slug: string;
  name: string;
  workspace_id: string;
  organisation_id: string;
  version_id: string;
  version: number;
  definition_json: string;
  created_at: number;
  updated_at: number;
}

interface VersionItem {
  pk: string;
  sk: string;
  id: string;
  guardrail_id: string;
  version: number;
  name: string;
  definition_json: string;
  created_at: number;
}

const now = () => Math.floor(Date.now() / 1000);
const partition = (workspaceId: string) => `WS#${workspaceId}`;
const GUARDRAIL_PREFIX = 'GR#';
const guardrailKey = (workspaceId: string, id: string) => ({ pk: partition(workspaceId), sk: GUARDRAIL_PREFIX + id });
const versionPrefix = (id: string) => `GRV#${id}#`;
const versionKey = (workspaceId: string, id: string, version: number) => ({
  pk: partition(workspaceId),
  sk: versionPrefix(id) + String(version).padStart(6, '0'),
});
const slugKey = (workspaceId: string, slug: string) => ({ pk: partition(workspaceId), sk: `GRSLUG#${slug}` });

export const isGuardrailId = (ref: string) => ref.startsWith(GUARDRAIL_ID_PREFIX);

function fromItem(item: GuardrailItem): Guardrail {
  const def = JSON.parse(item.definition_json) as GuardrailDefinition;
  return {
    object: 'guardrail',
    id: item.id,
    slug: item.slug,
    name: item.name,
    workspace_id: item.workspace_id,
    organisation_id: item.organisation_id,
    checks: def.checks,
    actions: def.actions,
    version_id: item.version_id,
    version: item.version,
    created_at: item.created_at,
    updated_at: item.updated_at,
  };
}

function fromVersionItem(item: VersionItem): GuardrailVersion {
  const def = JSON.parse(item.definition_json) as GuardrailDefinition;
  return {
    object: 'guardrail.version',
    id: item.id,
    guardrail_id: item.guardrail_id,
    version: item.version,
    name: item.name,
    checks: def.checks,
    actions: def.actions,
    created_at: item.created_at,
  };
}

// ---- data-plane read path -------------------------------------------------------------

const cache = new WorkspaceCache<Guardrail>(() => config().controlCacheTtlMs);

const forget = (g: { workspace_id: string; id: string; slug: string }) => cache.forget(g.workspace_id, g.id, g.slug);

/**
 * The latest version of a guardrail by id or slug, for evaluation. Cached per container
 * for CONTROL_CACHE_TTL_MS; writes in this container take effect at once, elsewhere
 * within the TTL.
 */
export function resolveGuardrail(workspaceId: string, ref: string): Promise<Guardrail | undefined> {
  return cache.get(workspaceId, ref, () => findItem(workspaceId, ref, false).then((i) => i && fromItem(i)));
}

export function clearGuardrailCache(): void {
  cache.clear();
}

// ---- control-plane CRUD ---------------------------------------------------------------

async function findItem(workspaceId: string, ref: string, consistent: boolean): Promise<GuardrailItem | undefined> {
  if (isGuardrailId(ref)) return getItem<GuardrailItem>('guardrails', guardrailKey(workspaceId, ref), consistent);
  const claim = await getItem<{ guardrail_id: string }>('guardrails', slugKey(workspaceId, ref), consistent);
  return claim ? getItem<GuardrailItem>('guardrails', guardrailKey(workspaceId, claim.guardrail_id), consistent) : undefined;
}

export async function getGuardrail(workspaceId: string, ref: string): Promise<Guardrail | undefined> {
  const item = await findItem(workspaceId, ref, true);
  return item ? fromItem(item) : undefined;
}

export async function listGuardrails(workspaceId: string, page: PageRequest): Promise<Page<Guardrail>> {
  const result = await listPage<GuardrailItem>({ table: 'guardrails', partition: partition(workspaceId), prefix: GUARDRAIL_PREFIX }, page);
  return { items: result.items.map(fromItem), hasMore: result.hasMore };
}

/** Every version of a guardrail, oldest first; undefined when there is no such guardrail. */
export async function listVersions(workspaceId: string, ref: string): Promise<GuardrailVersion[] | undefined> {
  const item = await findItem(workspaceId, ref, true);
  if (!item) return undefined;
  const versions = await queryAll<VersionItem>('guardrails', partition(workspaceId), versionPrefix(item.id));
  return versions.map(fromVersionItem);
}

function versionItem(workspaceId: string, guardrailId: string, version: number, name: string, definitionJson: string, ts: number): VersionItem {
  return {
    ...versionKey(workspaceId, guardrailId, version),
    id: VERSION_ID_PREFIX + timeOrderedId(),
    guardrail_id: guardrailId,
    version,
    name,
    definition_json: definitionJson,
    created_at: ts,
  };
}

/** Create a guardrail at version 1. The slug comes from the name, with a short suffix when taken. */
export async function createGuardrail(input: {
  workspaceId: string;
  organisationId: string;
  name: string;
  definition: GuardrailDefinition;
}): Promise<Guardrail> {
  const id = GUARDRAIL_ID_PREFIX + timeOrderedId();
  return createWithUniqueSlug({
    what: 'guardrail',
    slug: slugify(input.name),
    id,
    write: async (slug) => (await tryCreate(id, slug, input)) ?? 'taken',
  });
}

async function tryCreate(
  id: string,
  slug: string,
  input: { workspaceId: string; organisationId: string; name: string; definition: GuardrailDefinition },
): Promise<Guardrail | undefined> {
  const ts = now();
  const definitionJson = JSON.stringify(input.definition);
  const version = versionItem(input.workspaceId, id, 1, input.name, definitionJson, ts);
  const item: GuardrailItem = {
    ...guardrailKey(input.workspaceId, id),
    id,
    slug,
    name: input.name,
    workspace_id: input.workspaceId,
    organisation_id: input.organisationId,
    version_id: version.id,
    version: 1,
    definition_json: definitionJson,
    created_at: ts,
    updated_at: ts,
  };
  const table = tableName('guardrails');
  const notExists = 'attribute_not_exists(pk)';
  const written = await transactWrite([
    { Put: { TableName: table, Item: { ...slugKey(input.workspaceId, slug), guardrail_id: id }, ConditionExpression: notExists } },
    { Put: { TableName: table, Item: item, ConditionExpression: notExists } },
    { Put: { TableName: table, Item: version, ConditionExpression: notExists } },
  ]);
  if (!written) return undefined;
  forget(item);
  return fromItem(item);
}

const MAX_UPDATE_ATTEMPTS = 5;

/**
 * Write a new version from `patch` over the latest one and point the guardrail at it.
 * Concurrent updates are serialised by the version number: a writer that lost the race
 * re-reads and tries again. Undefined when there is no such guardrail.
 */
export async function updateGuardrail(
  workspaceId: string,
  ref: string,
  patch: { name?: string; definition?: Partial<GuardrailDefinition> },
): Promise<Guardrail | undefined> {
  const table = tableName('guardrails');
  for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt++) {
    const current = await findItem(workspaceId, ref, true);
    if (!current) return undefined;
    const previous = JSON.parse(current.definition_json) as GuardrailDefinition;
    const definition: GuardrailDefinition = {
      checks: patch.definition?.checks ?? previous.checks,
      actions: patch.definition?.actions ?? previous.actions,
    };
    const name = patch.name ?? current.name;
    const ts = now();
    const definitionJson = JSON.stringify(definition);
    const next = current.version + 1;
    const version = versionItem(workspaceId, current.id, next, name, definitionJson, ts);
    const update = buildUpdate({
      set: { name, version_id: version.id, version: next, definition_json: definitionJson, updated_at: ts },
      condition: '#version = :expected',
      conditionValues: { ':expected': current.version },
    });
    const written = await transactWrite([
      { Update: { TableName: table, Key: guardrailKey(workspaceId, current.id), ...update } },
      { Put: { TableName: table, Item: version, ConditionExpression: 'attribute_not_exists(pk)' } },
    ]);
    forget(current);
    if (written) {
      return fromItem({ ...current, name, version_id: version.id, version: next, definition_json: definitionJson, updated_at: ts });
    }
  }
  throw conflict('The guardrail is being changed by another request; try again.', 'concurrent_update');
}

/** Delete the guardrail, its slug claim and its versions; returns what was deleted. */
export async function deleteGuardrail(workspaceId: string, ref: string): Promise<Guardrail | undefined> {
  const found = await findItem(workspaceId, ref, true);
  if (!found) return undefined;
  const table = tableName('guardrails');
  const deleted = await transactWrite([
    { Delete: { TableName: table, Key: guardrailKey(workspaceId, found.id), ConditionExpression: 'attribute_exists(pk)' } },
    { Delete: { TableName: table, Key: slugKey(workspaceId, found.slug) } },
  ]);
  forget(found);
  if (!deleted) return undefined;
  // Versions are unreachable once the pointer is gone; remove them too.
  const versions = await queryAll<VersionItem>('guardrails', partition(workspaceId), versionPrefix(found.id));
  await Promise.all(versions.map((v) => deleteItem('guardrails', { pk: v.pk, sk: v.sk })));
  return fromItem(found);
}
