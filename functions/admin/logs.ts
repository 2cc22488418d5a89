import { getItem } from '../shared/db/ops';
import { listPage } from '../shared/db/list';
import { notFound } from '../shared/errors';
import { listObject, pageFromQuery } from '../shared/http/list';
import { ok } from '../shared/http/response';
import type { GatewayRequest, Route } from '../shared/http/types';
import { queryInt } from '../shared/validation';
import { logPartition, tracePartition, type RequestLogRecord } from '../gateway/request-log';

const nowSeconds = () => Math.floor(Date.now() / 1000);
const isExpired = (item: { ttl?: number }) => typeof item.ttl === 'number' && item.ttl <= nowSeconds();

const strip = (item: Record<string, unknown>): RequestLogRecord => {
  const { pk: _pk, sk: _sk, gsi1pk: _a, gsi1sk: _b, ttl: _t, ...record } = item;
  return record as RequestLogRecord;
};

/** `GET /v1/logs`: newest first; filters trace_id, provider, model, status, from/to (Unix seconds). */
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
  const ws = req.auth.workspaceId;
  const result = await listPage(
    {
      table: 'logs',
      ...(q.trace_id ? { index: 'gsi1' as const, partition: tracePartition(ws, q.trace_id) } : { partition: logPartition(ws) }),
      prefix: '',
      ...(clauses.length ? { filter: { expression: clauses.join(' AND '), names, values } } : {}),
    },
    page,
  );
  return ok(listObject(result.items.map((i) => strip(i as Record<string, unknown>)), result.hasMore));
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
