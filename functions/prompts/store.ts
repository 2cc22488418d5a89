import { setTimeout as sleep } from 'node:timers/promises';
import { config } from '../shared/config';
import { ddb, tableName } from '../shared/db/client';
import type { TransactWriteItem } from '../shared/db/document';
import { listPage, type Page, type PageRequest } from '../shared/db/list';
import { buildUpdate, deleteItem, getItem, updateItem, type Key } from '../shared/db/ops';
import { createWithUniqueSlug } from '../shared/db/slug-claim';
import { conflict } from '../shared/errors';
import { uuid } from '../shared/ids';
import { TtlCache, WorkspaceCache } from '../shared/stores/ttl-cache';
import { slugify } from '../shared/stores/workspaces';
import { isPromptId, MAX_PROMPT_REF_LENGTH, type VersionSelector } from './ref';
import type { PromptRecord, PromptVersion, VersionFields } from './types';

/**
 * The prompts table. Keys are workspace-prefixed, so every read is tenant-scoped:
 *
 * | item       | pk                          | sk           | gsi1pk                             | gsi1sk            |
 * |------------|-----------------------------|--------------|------------------------------------|-------------------|
 * | template   | `WS#<ws>#PROMPT#<id>`       | `HEAD`       | `WS#<ws>#PROMPTS`                  | id (uuid v7)      |
 * | version n  | `WS#<ws>#PROMPT#<id>`       | `V#<n, 10 digits>` | `WS#<ws>#PROMPT#<id>#VERSIONS` | prompt_version_id |
 * | slug claim | `WS#<ws>#PROMPTSLUG`        | slug         |                                    |                   |
 *
 * The template item holds the version counter (`latest_version`) and the Published
 * pointer. Versions are immutable and written only together with a conditional bump of
 * the counter (one transaction), so concurrent updates each get their own version and
 * none is lost. Version bodies are stored as JSON text, so any JSON round-trips exactly.
 */

const TABLE = 'prompts' as const;
const HEAD = 'HEAD';
const VERSION_PREFIX = 'V#';
const promptPk = (ws: string, id: string) => `WS#${ws}#PROMPT#${id}`;
const headKey = (ws: string, id: string): Key => ({ pk: promptPk(ws, id), sk: HEAD });
const versionKey = (ws: string, id: string, n: number): Key => ({ pk: promptPk(ws, id), sk: VERSION_PREFIX + String(n).padStart(10, '0') });
const slugKey = (ws: string, slug: string): Key => ({ pk: `WS#${ws}#PROMPTSLUG`, sk: slug });
const listPartition = (ws: string) => `WS#${ws}#PROMPTS`;
const versionsPartition = (ws: string, id: string) => `WS#${ws}#PROMPT#${id}#VERSIONS`;

/** How many times an update re-reads the latest version after losing a race. */
const MAX_UPDATE_ATTEMPTS = 10;

type HeadItem = PromptRecord & Key & { gsi1pk: string; gsi1sk: string };

interface VersionItem extends Key {
  gsi1pk: string;
  gsi1sk: string;
  prompt_id: string;
  prompt_version_id: string;
  version: number;
  workspace_id: string;
  created_at: number;
  body_json: string;
}

const now = () => Math.floor(Date.now() / 1000);

function fromHead(item: HeadItem): PromptRecord {
  const { pk: _pk, sk: _sk, gsi1pk: _a, gsi1sk: _b, ...record } = item;
  return { ...record, collection_id: record.collection_id ?? null };
}

function fromVersion(item: VersionItem): PromptVersion {
  return {
    prompt_id: item.prompt_id,
    prompt_version_id: item.prompt_version_id,
    version: item.version,
    created_at: item.created_at,
    ...(JSON.parse(item.body_json) as VersionFields),
  };
}

function versionItem(ws: string, promptId: string, n: number, fields: VersionFields): VersionItem {
  const id = uuid();
  return {
    ...versionKey(ws, promptId, n),
    gsi1pk: versionsPartition(ws, promptId),
    gsi1sk: id,
    prompt_id: promptId,
    prompt_version_id: id,
    version: n,
    workspace_id: ws,
    created_at: now(),
    body_json: JSON.stringify(fields),
  };
}

type TransactOutcome = 'ok' | 'condition' | 'conflict';

/** A transaction; a failed condition and a clash with a concurrent transaction are outcomes, not errors. */
async function transact(items: TransactWriteItem[]): Promise<TransactOutcome> {
  try {
    await ddb.transactWrite({ TransactItems: items });
    return 'ok';
  } catch (err) {
    const e = err as { name?: string; CancellationReasons?: Array<{ Code?: string }> };
    if (e.name === 'TransactionConflictException') return 'conflict';
    if (e.name === 'TransactionCanceledException') {
      const codes = (e.CancellationReasons ?? []).map((r) => r.Code);
      if (codes.includes('ConditionalCheckFailed')) return 'condition';
      if (codes.includes('TransactionConflict')) return 'conflict';
    }
    throw err;
  }
}

// ---- caches for the data plane (render, completions) ---------------------------------------

/** Template records by id and by slug: short TTL, dropped by writers in this container. */
const heads = new WorkspaceCache<PromptRecord>(() => config().controlCacheTtlMs);
/** Versions never change once written, so they may stay cached much longer. */
const versions = new TtlCache<PromptVersion>(() => 3_600_000, 2_000);
const cacheKey = (...parts: Array<string | number>) => parts.join('\u0000');

const forget = (ws: string, p: Pick<PromptRecord, 'id' | 'slug'>) => heads.forget(ws, p.id, p.slug);

export function clearPromptCache(): void {
  heads.clear();
  versions.clear();
}

// ---- reads ---------------------------------------------------------------------------------

/** A template by id or slug; `cached` reads go through the data-plane cache. */
export async function findPrompt(ws: string, ref: string, opts: { cached?: boolean } = {}): Promise<PromptRecord | undefined> {
  if (!ref || ref.length > MAX_PROMPT_REF_LENGTH) return undefined;
  const load = async () => {
    const consistent = !opts.cached;
    let id = ref;
    if (!isPromptId(ref)) {
      const claim = await getItem<{ prompt_id: string }>(TABLE, slugKey(ws, ref), consistent);
      if (!claim) return undefined;
      id = claim.prompt_id;
    }
    const item = await getItem<HeadItem>(TABLE, headKey(ws, id), consistent);
    return item ? fromHead(item) : undefined;
  };
  return opts.cached ? heads.get(ws, ref, load) : load();
}

/** The version number a selector names, or undefined when there is none. */
export function selectVersion(prompt: PromptRecord, selector: VersionSelector): number | undefined {
  if (selector.kind === 'published') return prompt.published_version;
  if (selector.kind === 'latest') return prompt.latest_version;
  return selector.n >= 1 && selector.n <= prompt.latest_version ? selector.n : undefined;
}

export async function getVersion(ws: string, promptId: string, n: number, opts: { cached?: boolean } = {}): Promise<PromptVersion | undefined> {
  const load = async () => {
    const item = await getItem<VersionItem>(TABLE, versionKey(ws, promptId, n), !opts.cached);
    return item ? fromVersion(item) : undefined;
  };
  return opts.cached ? versions.get(cacheKey(ws, promptId, n), load) : load();
}

export async function listPrompts(ws: string, page: PageRequest, collectionId?: string): Promise<Page<PromptRecord>> {
  const result = await listPage<HeadItem>(
    {
      table: TABLE,
      index: 'gsi1',
      partition: listPartition(ws),
      prefix: '',
      ...(collectionId !== undefined
        ? { filter: { expression: '#collection = :collection', names: { '#collection': 'collection_id' }, values: { ':collection': collectionId } } }
        : {}),
    },
    page,
  );
  return { items: result.items.map(fromHead), hasMore: result.hasMore };
}

/** Versions in creation order (cursors are prompt_version_ids, which are uuid v7). */
export async function listVersions(ws: string, promptId: string, page: PageRequest): Promise<Page<PromptVersion>> {
  const result = await listPage<VersionItem>({ table: TABLE, index: 'gsi1', partition: versionsPartition(ws, promptId), prefix: '' }, page);
  return { items: result.items.map(fromVersion), hasMore: result.hasMore };
}

// ---- writes --------------------------------------------------------------------------------

/** A URL-friendly slug from the name, never shaped like a uuid (ids and slugs share `{promptId}`). */
function slugFromName(name: string): string {
  const slug = slugify(name);
  return isPromptId(slug) ? `prompt-${slug}`.slice(0, 64) : slug;
}

export interface NewPrompt {
  name: string;
  collection_id: string | null;
  fields: VersionFields;
}

/**
 * Create a template with version 1, which is Published. The slug comes from the name;
 * when another template holds it, a short suffix from the id is added.
 */
export async function createPrompt(ws: string, input: NewPrompt): Promise<{ prompt: PromptRecord; version: PromptVersion }> {
  const id = uuid();
  return createWithUniqueSlug({
    what: 'prompt template',
    slug: slugFromName(input.name),
    id,
    write: async (slug) => {
      const written = await writeNewPrompt(ws, id, slug, input);
      return written.created ?? (written.outcome === 'conflict' ? 'conflict' : 'taken');
    },
  });
}

async function writeNewPrompt(
  ws: string,
  id: string,
  slug: string,
  input: NewPrompt,
): Promise<{ outcome: TransactOutcome; created?: { prompt: PromptRecord; version: PromptVersion } }> {
  const table = tableName(TABLE);
  const version = versionItem(ws, id, 1, input.fields);
  const ts = version.created_at;
  const prompt: PromptRecord = {
    id,
    slug,
    name: input.name,
    collection_id: input.collection_id,
    workspace_id: ws,
    latest_version: 1,
    latest_version_id: version.prompt_version_id,
    published_version: 1,
    published_version_id: version.prompt_version_id,
    created_at: ts,
    updated_at: ts,
  };
  const head: HeadItem = { ...headKey(ws, id), gsi1pk: listPartition(ws), gsi1sk: id, ...prompt };
  const outcome = await transact([
    { Put: { TableName: table, Item: { ...slugKey(ws, slug), prompt_id: id }, ConditionExpression: 'attribute_not_exists(pk)' } },
    { Put: { TableName: table, Item: head, ConditionExpression: 'attribute_not_exists(pk)' } },
    { Put: { TableName: table, Item: version, ConditionExpression: 'attribute_not_exists(pk)' } },
  ]);
  if (outcome !== 'ok') return { outcome };
  forget(ws, prompt);
  return { outcome, created: { prompt, version: fromVersion(version) } };
}

/** What an update writes: the new version's fields, and template fields to change. */
export interface VersionDraft {
  fields: VersionFields;
  name?: string;
  collection_id?: string | null;
}

/**
 * Add version latest+1. `draft` sees the current template and latest version (it may
 * throw a 400); when a concurrent update wins the race, both are read again and `draft`
 * runs again, so a patch always applies to the version it follows. Undefined when the
 * template does not exist.
 */
export async function addVersion(
  ws: string,
  promptId: string,
  draft: (prompt: PromptRecord, latest: PromptVersion) => VersionDraft,
): Promise<{ prompt: PromptRecord; version: PromptVersion } | undefined> {
  const table = tableName(TABLE);
  for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt++) {
    if (attempt > 0) await sleep(Math.floor(Math.random() * 10 * attempt));
    const head = await getItem<HeadItem>(TABLE, headKey(ws, promptId), true);
    if (!head) return undefined;
    const prompt = fromHead(head);
    const latest = await getVersion(ws, promptId, prompt.latest_version);
    if (!latest) throw new Error(`prompt ${promptId}: version ${prompt.latest_version} is missing`);
    const next = draft(prompt, latest);
    const n = prompt.latest_version + 1;
    const version = versionItem(ws, promptId, n, next.fields);
    const update = buildUpdate({
      set: {
        latest_version: n,
        latest_version_id: version.prompt_version_id,
        updated_at: version.created_at,
        name: next.name,
        collection_id: next.collection_id,
      },
      condition: '#latest_version = :expected',
      conditionValues: { ':expected': prompt.latest_version },
    });
    const outcome = await transact([
      { Update: { TableName: table, Key: headKey(ws, promptId), ...update } },
      { Put: { TableName: table, Item: version, ConditionExpression: 'attribute_not_exists(pk)' } },
    ]);
    if (outcome === 'ok') {
      const updated: PromptRecord = {
        ...prompt,
        latest_version: n,
        latest_version_id: version.prompt_version_id,
        updated_at: version.created_at,
        ...(next.name !== undefined ? { name: next.name } : {}),
        ...(next.collection_id !== undefined ? { collection_id: next.collection_id } : {}),
      };
      forget(ws, updated);
      return { prompt: updated, version: fromVersion(version) };
    }
  }
  throw conflict('The prompt template is being updated by many requests at once; retry.', 'concurrent_update');
}

/** Make version n the Published one; undefined when the template or the version does not exist. */
export async function publishVersion(ws: string, promptId: string, version: PromptVersion): Promise<PromptRecord | undefined> {
  const updated = await updateItem<HeadItem>(TABLE, headKey(ws, promptId), {
    set: { published_version: version.version, published_version_id: version.prompt_version_id, updated_at: now() },
    condition: 'attribute_exists(pk) AND #latest_version >= :n',
    conditionValues: { ':n': version.version },
  });
  if (!updated) return undefined;
  const prompt = fromHead(updated);
  forget(ws, prompt);
  return prompt;
}

/** Delete a template, its slug and every version; returns what was deleted. */
export async function deletePrompt(ws: string, prompt: PromptRecord): Promise<PromptRecord | undefined> {
  const table = tableName(TABLE);
  const outcome = await transact([
    { Delete: { TableName: table, Key: headKey(ws, prompt.id), ConditionExpression: 'attribute_exists(pk)' } },
    { Delete: { TableName: table, Key: slugKey(ws, prompt.slug) } },
  ]);
  forget(ws, prompt);
  if (outcome === 'condition') return undefined;
  if (outcome === 'conflict') throw conflict('The prompt template is being changed by another request; retry.', 'concurrent_update');
  // The template is gone for every reader; its versions are removed after it.
  let start: Record<string, unknown> | undefined;
  do {
    const out = await ddb.query({
      TableName: table,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': promptPk(ws, prompt.id), ':prefix': VERSION_PREFIX },
      ProjectionExpression: 'pk, sk',
      ExclusiveStartKey: start,
    });
    const keys = (out.Items ?? []) as Key[];
    for (let i = 0; i < keys.length; i += 10) {
      await Promise.all(keys.slice(i, i + 10).map((key) => deleteItem(TABLE, { pk: key.pk, sk: key.sk })));
    }
    start = out.LastEvaluatedKey;
  } while (start);
  return prompt;
}
