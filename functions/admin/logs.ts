import { ddb, tableName } from '../shared/db/client';
import { getItem } from '../shared/db/ops';
import type { Page, PageRequest } from '../shared/db/list';
import { listMerged } from '../shared/db/merged-list';
import { ID_PREFIX } from '../shared/ids';
import { badRequest, notFound } from '../shared/errors';
import { listObject, pageFromQuery } from '../shared/http/list';
import { ok } from '../shared/http/response';
import type { GatewayRequest, Route } from '../shared/http/types';
import { queryInt } from '../shared/validation';
import { INDEXED_METADATA_KEYS, LOG_METADATA_INDEXES, type IndexedMetadataKey } from '../shared/tables';
import { MAX_WELL_KNOWN_METADATA_CHARS } from '../gateway/headers';
import { logPartitionsOfId, logReadPartitions, metadataReadPartitions, traceReadPartitions } from '../shared/db/log-keys';
import type { RequestLogRecord } from '../spend/request-record';

const nowSeconds = () => Math.floor(Date.now() / 1000);
const isExpired = (item: { ttl?: number }) => typeof item.ttl === 'number' && item.ttl <= nowSeconds();

const INDEX_ATTRIBUTES = new Set<string>(Object.values(LOG_METADATA_INDEXES).map((i) => i.partitionKey));

const strip = (item: Record<string, unknown>): RequestLogRecord => {
  const { pk: _pk, sk: _sk, gsi1pk: _a, gsi1sk: _b, ttl: _t, ...record } = item;
  for (const attribute of INDEX_ATTRIBUTES) delete record[attribute];
  return record as RequestLogRecord;
};

const METADATA_PARAM = 'metadata.';
const _isIndexed = (key: string): key is IndexedMetadataKey => (INDEXED_METADATA_KEYS as readonly string[]).includes(key);

/** `metadata.<key>=<value>` query parameters, in the order given. */
function metadataFilters(query: Record<string, string>): Array<[key: string, value: string]> {
  const filters: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(query)) {
    if (!name.startsWith(METADATA_PARAM)) continue;
    const key = name.slice(METADATA_PARAM.length);
    if (!key) throw badRequest('A metadata filter names its key: `metadata.<key>=<value>`, e.g. `metadata._user=u-1`.', name, 'invalid_value');
    if (!value) throw badRequest(`\`${name}\` needs a value to compare with (equality).`, name, 'invalid_value');
    if (value.length > MAX_WELL_KNOWN_METADATA_CHARS)
      throw badRequest(`\`${name}\` must be at most ${MAX_WELL_KNOWN_METADATA_CHARS} characters.`, name, 'invalid_value');
    filters.push([key, value]);
  }
  return filters;
}

/**
 * Where to read a filtered list from, never the whole workspace: a trace id's partitions, or
 * those of the index of the most selective well-known metadata key filtered on (`_user` first,
 * `_environment` last). Metadata keys outside the indexes only narrow one of those. Every
 * filter stays a filter too: an index's legacy partition key can equal another value's shard.
 */
function listSource(ws: string, traceId: string | undefined, filters: Array<[string, string]>) {
  if (traceId) return { index: 'gsi1' as const, partitions: traceReadPartitions(ws, traceId), rest: filters };
  const indexedKey = INDEXED_METADATA_KEYS.find((key) => filters.some(([k]) => k === key));
  if (indexedKey) {
    const value = filters.find(([k]) => k === indexedKey)![1];
    return { index: LOG_METADATA_INDEXES[indexedKey], partitions: metadataReadPartitions(ws, value), rest: filters };
  }
  if (filters.length) {
    const [key] = filters[0]!;
    throw badRequest(
      `Logs can be filtered on metadata key '${key}' only together with an indexed key (${INDEXED_METADATA_KEYS.map((k) => `metadata.${k}`).join(', ')}) or trace_id.`,
      `${METADATA_PARAM}${key}`,
      'unindexed_filter',
    );
  }
  return { partitions: logReadPartitions(ws), rest: filters };
}

/**
 * `GET /v1/logs`: newest first; filters trace_id, api_key_id, provider, model, status, from/to (Unix
 * seconds), the MCP tool-call fields kind, mcp_server, mcp_tool, mcp_status and
 * `metadata.<key>=<value>` (equality, all must hold).
 */
async function list(req: GatewayRequest) {
  const q = req.query;
  const page = pageFromQuery(q, { limit: 20, maxLimit: 100, order: 'desc' });
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const clauses: string[] = [];
  const filter = (attr: string, op: string, value: unknown) => {
    names[`#${attr}`] = attr;
    values[`:${attr}${clauses.length}`] = value;
    clauses.push(`#${attr} ${op} :${attr}${clauses.length}`);
  };
  if (q.trace_id) filter('trace_id', '=', q.trace_id);
  if (q.api_key_id) filter('api_key_id', '=', q.api_key_id);
  if (q.provider) filter('provider', '=', q.provider);
  if (q.model) filter('model', '=', q.model);
  // Tool calls (docs/mcp.md): `kind=mcp`, and the server, tool and outcome of each call.
  for (const attr of ['kind', 'mcp_server', 'mcp_tool', 'mcp_status'] as const) if (q[attr]) filter(attr, '=', q[attr]);
  if (q.status) filter('status', '=', queryInt(q.status, 'status', 100, 599, 0));
  if (q.from) filter('created_at', '>=', queryInt(q.from, 'from', 0, Number.MAX_SAFE_INTEGER, 0));
  if (q.to) filter('created_at', '<=', queryInt(q.to, 'to', 0, Number.MAX_SAFE_INTEGER, 0));
  // Expired records stay until DynamoDB's TTL deletes them (within days on AWS; never in
  // the local runtime, which leaves TTL off for this table): they are not shown.
  filter('ttl', '>', nowSeconds());
  const source = listSource(req.auth.workspaceId, q.trace_id, metadataFilters(q));
  if (source.rest.length) names['#metadata'] = 'metadata';
  source.rest.forEach(([key, value], i) => {
    names[`#mk${i}`] = key;
    values[`:mv${i}`] = value;
    clauses.push(`#metadata.#mk${i} = :mv${i}`);
  });
  const where = clauses.length ? { expression: clauses.join(' AND '), names, values } : undefined;
  const listed = listMerged<Record<string, unknown>>(
    { table: 'logs', ...(source.index ? { index: source.index } : {}), partitions: source.partitions, ...(where ? { filter: where } : {}) },
    page,
  );
  const result = q.trace_id?.startsWith(ID_PREFIX.log)
    ? withRecord(...(await Promise.all([listed, recordOfTrace(req.auth.workspaceId, q.trace_id, where)])), page)
    : await listed;
  return ok(
    listObject(
      result.items.map((i) => strip(i)),
      result.hasMore,
    ),
  );
}

type Filter = { expression: string; names: Record<string, string>; values: Record<string, unknown> };

/**
 * The record whose id is the trace id (a trace the gateway made: that one record, not in the
 * trace index) when it passes the list's filters.
 */
async function recordOfTrace(workspaceId: string, traceId: string, filter: Filter | undefined) {
  for (const partition of logPartitionsOfId(workspaceId, traceId)) {
    const out = await ddb.query({
      TableName: tableName('logs'),
      KeyConditionExpression: '#pk = :pk AND #sk = :sk',
      FilterExpression: filter?.expression,
      ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk', ...filter?.names },
      ExpressionAttributeValues: { ':pk': partition, ':sk': traceId, ...filter?.values },
    });
    if (out.Items?.[0]) return out.Items[0] as Record<string, unknown>;
  }
  return undefined;
}

/** A record by id: in the shard its id names (one read), else where an earlier shard count or the unsharded log put it. */
async function recordById(workspaceId: string, id: string): Promise<Record<string, unknown> | undefined> {
  for (const partition of logPartitionsOfId(workspaceId, id)) {
    const item = await getItem('logs', { pk: partition, sk: id });
    if (item) return item;
  }
  return undefined;
}

/** A page of the trace index with the trace's own record put in its place (if it falls within the cursors). */
function withRecord(indexed: Page<Record<string, unknown>>, record: Record<string, unknown> | undefined, page: PageRequest): Page<Record<string, unknown>> {
  const id = record?.sk as string | undefined;
  if (!record || !id || indexed.items.some((i) => i.sk === id)) return indexed;
  const newer = (a: string, b: string) => (page.order === 'desc' ? a > b : a < b); // a comes first in list order
  if (page.after !== undefined && !newer(page.after, id)) return indexed;
  if (page.before !== undefined && !newer(id, page.before)) return indexed;
  const items = [...indexed.items, record].sort((a, b) => (newer(a.sk as string, b.sk as string) ? -1 : 1));
  if (items.length <= page.limit) return { items, hasMore: indexed.hasMore };
  // Paging back (`before` only) keeps the items nearest the cursor: the end of the list.
  const kept = page.before !== undefined && page.after === undefined ? items.slice(-page.limit) : items.slice(0, page.limit);
  return { items: kept, hasMore: true };
}

async function get(req: GatewayRequest) {
  const item = await recordById(req.auth.workspaceId, req.params.id!);
  if (!item || isExpired(item)) throw notFound(`No request log '${req.params.id}' in this workspace.`, 'id');
  return ok(strip(item));
}

export const logRoutes: Route[] = [
  { method: 'GET', path: '/v1/logs', access: 'member', handler: list },
  { method: 'GET', path: '/v1/logs/{id}', access: 'member', handler: get },
];
