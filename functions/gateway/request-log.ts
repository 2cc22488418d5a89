import { config } from '../shared/config';
import { INDEXED_METADATA_KEYS, LOG_METADATA_INDEXES } from '../shared/tables';
import { ID_PREFIX, newId } from '../shared/ids';
import type { CallerRequest, Middleware } from '../shared/http/types';
import { mergeHeaders } from '../shared/http/response';
import { afterResponse, type RequestContext } from '../shared/telemetry/context';
import { logPartition, metadataPartition, tracePartition } from '../shared/db/log-keys';
import { writeRequestTelemetry } from '../shared/telemetry/metrics';
import { countStored, priceFacts } from '../spend/load';
import type { RequestFacts, RequestLogRecord } from '../spend/request-record';
import type { BudgetCharge } from '../policies/budget-spend';
import { storeLogRecord } from './log-store';
import { openedLogJournal, openLogJournal } from './log-journal';

/** The metadata index attributes of a record: one per well-known key it carries. */
function metadataIndexKeys(record: RequestLogRecord): Record<string, string> {
  const keys: Record<string, string> = {};
  for (const key of INDEXED_METADATA_KEYS) {
    const value = record.metadata[key];
    if (value !== undefined && value !== '') keys[LOG_METADATA_INDEXES[key].partitionKey] = metadataPartition(record.workspace_id, value, record.id);
  }
  return keys;
}

/** Well-known metadata the gateway fills when the caller did not: `_prompt` on a prompt template's run. */
function withDerivedMetadata(facts: RequestFacts): Record<string, string> {
  const promptId = facts.extra?.prompt_id;
  return typeof promptId === 'string' && facts.metadata._prompt === undefined ? { ...facts.metadata, _prompt: promptId } : facts.metadata;
}

/**
 * One structured log line, EMF metrics and a request-log record per request, all written
 * after the response has been sent (the record is an after-response task, finished before
 * the invocation ends; concurrent requests of one process share BatchWriteItem calls).
 */
export function recordRequest(req: CallerRequest, facts: RequestFacts): void {
  // The first record of a request whose trace id the gateway made takes that id (only one can).
  const reservedId = req.context.logId;
  req.context.logId = undefined;
  afterResponse(req.context, async () => {
    const now = Date.now();
    const cost = facts.cost ?? (await priceFacts(req, facts));
    const record: RequestLogRecord = {
      object: 'request_log',
      id: reservedId ?? newId(ID_PREFIX.log),
      trace_id: req.traceId,
      workspace_id: req.auth.workspaceId,
      organisation_id: req.auth.organisationId,
      api_key_id: req.auth.keyId,
      method: req.method,
      path: req.path,
      route: facts.route,
      provider: facts.provider ?? null,
      managed_provider: facts.managedProvider ?? null,
      model: facts.model ?? null,
      status: facts.status,
      stream: facts.stream,
      latency_ms: now - req.receivedAt,
      upstream_latency_ms: facts.upstreamLatencyMs ?? null,
      usage: facts.usage
        ? { prompt_tokens: facts.usage.prompt_tokens, completion_tokens: facts.usage.completion_tokens, total_tokens: facts.usage.total_tokens }
        : null,
      cache_status: facts.cacheStatus ?? null,
      retry_count: facts.retries,
      attempts: facts.attempts,
      metadata: withDerivedMetadata(facts),
      error: facts.streamError ?? null,
      ...cost,
      created_at: Math.floor(now / 1000),
      ...facts.extra,
    };
    // Journaled first (a crash after this loses nothing); the budget charge goes with the record's write; the spend counters count it once stored.
    const charge: BudgetCharge | undefined = facts.budgets?.buckets.length
      ? { grant: facts.budgets, costUsd: record.cost_usd, workspaceId: record.workspace_id, context: req.context }
      : undefined;
    const item = requestLogItem(record);
    const settle = await journalRecord(item, charge);
    writeRequestTelemetry(
      'request',
      {
        route: record.route,
        method: record.method,
        path: record.path,
        provider: record.provider,
        model: record.model,
        status: record.status,
        latency_ms: record.latency_ms,
        upstream_latency_ms: record.upstream_latency_ms,
        tokens: record.usage,
        cache_status: record.cache_status,
        retry_count: record.retry_count,
        metadata: record.metadata,
        stream: record.stream,
        cost_usd: record.cost_usd,
        ...(record.error ? { stream_error: record.error } : {}),
      },
      {
        route: record.route,
        provider: record.provider ?? undefined,
        status: record.status,
        latencyMs: record.latency_ms,
        upstreamLatencyMs: record.upstream_latency_ms ?? undefined,
        promptTokens: record.usage?.prompt_tokens,
        completionTokens: record.usage?.completion_tokens,
        cacheHit: record.cache_status ? record.cache_status === 'HIT' : undefined,
        rateLimited: facts.rateLimited,
        guardrailBlocked: facts.guardrailBlocked,
      },
      req.context,
    );
    // The spend counters count the record once stored (by the log-records queue's consumer
    // if its write kept failing: ./log-store.ts); the journal entry settles either way.
    const stored = storeLogRecord(item, charge, req.context);
    if (settle) stored.then(settle, settle);
    if (await stored) await countStored(record, Promise.resolve());
  });
}

/** Appends a record's write to the journal, if there is one; returns what settles it. */
async function journalRecord(item: ReturnType<typeof requestLogItem>, charge: BudgetCharge | undefined): Promise<(() => void) | undefined> {
  const opened = openedLogJournal();
  // Null (none, as on Lambda) is known after the first request: no await on the hot path.
  const journal = opened === undefined ? await openLogJournal() : opened;
  return journal?.record(item, charge);
}

/**
 * The stored item of a record: keyed by workspace (newest first by id), by the value of each
 * well-known metadata key it has (`_user`, `_prompt`, ...) and, unless the record's id is its
 * trace id (a trace the gateway made has that one record, found by its key), by trace id.
 * The trace index costs a second write unit per record, so only traces that can hold several
 * records (a caller's trace id, an assistant run's) pay it. Every key is in the record id's
 * write shard (functions/shared/db/log-keys.ts).
 */
export function requestLogItem(record: RequestLogRecord): RequestLogRecord & { pk: string; sk: string; gsi1pk?: string; gsi1sk?: string; ttl: number } {
  return {
    pk: logPartition(record.workspace_id, record.id),
    sk: record.id,
    ...(record.id === record.trace_id ? {} : { gsi1pk: tracePartition(record.workspace_id, record.trace_id, record.id), gsi1sk: record.id }),
    ...metadataIndexKeys(record),
    ttl: record.created_at + config().requestLogTtlDays * 86_400,
    ...record,
  };
}

/**
 * A request's log record, scheduled now and written after the response: its facts are
 * filled in as the request proceeds. For callers that are not HTTP routes (the assistants
 * engine); they set `status` themselves.
 */
export function openRequestLog(req: CallerRequest, route: string): RequestFacts {
  const facts: RequestFacts = { route, status: 500, stream: false, retries: 0, attempts: [], metadata: {} };
  recordRequest(req, facts);
  return facts;
}

/** The request log each request opened by `requestLog` fills, by request context (shared by a handler's changed copies of a request). */
const openLogs = new WeakMap<RequestContext, RequestFacts>();

/**
 * Middleware of inference routes: the request's log record is scheduled before the handler
 * runs, so even a request rejected by validation leaves one, with the status it got; a whole
 * answer that used tokens is priced before it is sent (`x-gateway-cost`). The handler fills
 * the record's facts through `requestFacts(req)`.
 */
export function requestLog(route: string): Middleware {
  return async (req, next) => {
    const facts = openRequestLog(req, route);
    openLogs.set(req.context, facts);
    try {
      const res = await next();
      if (facts.status === 500) facts.status = res.statusCode;
      // A whole answer carries its cost; a streamed one's is known only in its log record.
      if (res.statusCode < 400 && (typeof res.body === 'string' || Buffer.isBuffer(res.body)) && (facts.usage || facts.extra?.search_units !== undefined)) {
        facts.cost = await priceFacts(req, facts);
        if (facts.cost.cost_usd !== null) res.headers = mergeHeaders(res.headers, { 'x-gateway-cost': String(facts.cost.cost_usd) });
      }
      return res;
    } catch (err) {
      facts.status = (err as { status?: number }).status ?? 500;
      throw err;
    }
  };
}

/**
 * A route's name and its `requestLog` middleware under that name, then any further middleware
 * (inside it, so what they answer is logged): `{ method, path, scope, ...logged('embeddings', idempotency), handler }`.
 */
export const logged = (name: string, ...more: Middleware[]) => ({ name, use: [requestLog(name), ...more] });

/** The log facts of a request whose route runs the `requestLog` middleware. */
export function requestFacts(req: CallerRequest): RequestFacts {
  const facts = openLogs.get(req.context);
  if (!facts) throw new Error(`No request log is open for ${req.method} ${req.path}: its route lacks the requestLog middleware.`);
  return facts;
}
