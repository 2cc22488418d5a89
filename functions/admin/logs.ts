import { getItem } from '../shared/db/ops';
import { listPage } from '../shared/db/list';
import { badRequest, notFound } from '../shared/errors';
import { listObject, pageFromQuery } from '../shared/http/list';
import { ok } from '../shared/http/response';
import type { GatewayRequest, Route } from '../shared/http/types';
import { queryInt } from '../shared/validation';
import { INDEXED_METADATA_KEYS, LOG_METADATA_INDEXES, type IndexedMetadataKey } from '../shared/tables';
import { MAX_WELL_KNOWN_METADATA_CHARS } from '../gateway/headers';
import { logPartition, metadataPartition, tracePartition } from '../gateway/log-keys';
import type { RequestLogRecord } from '../gateway/request-log';

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
 * Where to read a filtered list from, never the whole workspace: a trace id's partition, or
 * the index of the most selective well-known metadata key filtered on (`_user` first,
 * `_environment` last). Metadata keys outside the indexes only narrow one of those.
 */
function listSource(ws: string, traceId: string | undefined, filters: Array<[string, string]>) {
  if (traceId) return { index: 'gsi1' as const, partition: tracePartition(ws, traceId), rest: filters };
  const indexedKey = INDEXED_METADATA_KEYS.find((key) => filters.some(([k]) => k === key));
  if (indexedKey) {
    const value = filters.find(([k]) => k === indexedKey)![1];
    return { index: LOG_METADATA_INDEXES[indexedKey], partition: metadataPartition(ws, value), rest: filters.filter(([k]) => k !== indexedKey) };
  }
  if (filters.length) {
    const [key] = filters[0]!;
    throw badRequest(
      `Logs can be filtered on metadata key '${key}' only together with an indexed key (${INDEXED_METADATA_KEYS.map((k) => `metadata.${k}`).join(', ')}) or trace_id.`,
      `${METADATA_PARAM}${key}`,
      'unindexed_filter',
    );
  }
  return { partition: logPartition(ws), rest: filters };
}

/**
 * `GET /v1/logs`: newest first; filters trace_id, provider, model, status, from/to (Unix
 * seconds) and `metadata.<key>=<value>` (equality, all must hold).
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
  if (q.provider) filter('provider', '=', q.provider);
  if (q.model) filter('model', '=', q.model);
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
  const result = await listPage(
    {
      table: 'logs',
      ...(source.index ? { index: source.index } : {}),
      partition: source.partition,
      prefix: '',
      ...(clauses.length ? { filter: { expression: clauses.join(' AND '), names, values } } : {}),
    },
    page,
  );
  return ok(
    listObject(
      result.items.map((i) => strip(i as Record<string, unknown>)),
      result.hasMore,
    ),
  );
}

async function get(req: GatewayRequest) {
  const item = await getItem<{ ttl?: number }>('logs', { pk: logPartition(req.auth.workspaceId), sk: req.params.id! });
  if (!item || isExpired(item)) throw notFound(`No request log '${req.params.id}' in this workspace.`, 'id');
  return ok(strip(item));
}

export const logRoutes: Route[] = [
  { method: 'GET', path: '/v1/logs', scope: 'admin', handler: list },
  { method: 'GET', path: '/v1/logs/{id}', scope: 'admin', handler: get },
];
