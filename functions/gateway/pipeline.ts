import { setTimeout as sleep } from 'node:timers/promises';
import { config } from '../shared/config';
import { callerClosedRequest, GatewayError } from '../shared/errors';
import type { ConfigNode } from '../shared/gateway-config';
import { mergeHeaders } from '../shared/http/response';
import type { CallerRequest } from '../shared/http/types';
import { AbortError, sendUpstream, type UpstreamResponse } from '../shared/net/http-client';
import type { ProviderAdapter, ProviderTarget, UpstreamRequest, Usage } from '../providers/types';
import { enforceBudgets } from '../policies/budgets';
import { enforceRateLimits, recordTokenUsage, refillRateLimitUnits, releaseRateLimitUnits, type LimitSubject } from '../policies/limiter';
import { afterResponse } from '../shared/telemetry/context';
import type { GatewayConfigSpec } from '../shared/gateway-config';
import { resolveManagedProvider } from '../shared/stores/providers';
import { warmPricing } from '../spend/load';
import { planCache, readCache, storeBuffered, storeWhileStreaming, type CacheStatus } from './cache';
import { parseGatewayOptions, withEndUser, type GatewayOptions } from './headers';
import type { RequestFacts } from '../spend/request-record';
import { routeRequest, type AttemptResult, type Leaf, type RoutingDeps, type RoutingResult, type UpstreamOutcome } from './routing';
import { resolveConfig, resolveLeaf, type ResolvedConfig, type ResolvedTarget } from './target';
import { readJsonBody } from './upstream-body';

/** What an inference route needs from the pipeline to reach a provider. */
export interface DispatchSpec {
  req: CallerRequest;
  /**
   * The request's log record, for what cannot wait for the result: a refusal before any
   * provider is called (rate limit, bad header, config) still logs metadata and model, and
   * token policies read the final usage once the response (or stream) has ended.
   */
  log: DispatchLog;
  /** Model named in the body, for rate-limit conditions and logs. */
  model?: string;
  /** Route name for the cache key; set only on cacheable routes (chat, embeddings, rerank). */
  cacheRoute?: string;
  /** Request body fields for conditional routing (`params.*`). */
  params?: Record<string, unknown>;
  /** Async work per routed target before it is built (input guardrails); may throw. */
  beforeAttempt?(resolved: ResolvedTarget, leaf: Leaf): Promise<void>;
  /**
   * The route translates a non-streamed JSON answer: a successful body is read (bounded)
   * and parsed within the attempt, so a body that fails after the headers (reset, cut,
   * deadline, not JSON) is that attempt's failure and retries and fallback apply.
   */
  readsJson?: boolean;
  /**
   * With `readsJson`: the route's translation of the parsed answer, run within the attempt
   * (so only once): a body of a shape it cannot read (502 `invalid_upstream_response`) is
   * that attempt's failure too, and is not cached. Its result is the outcome's `translated`
   * (responses.ts `translatedJson`).
   */
  translateJson?(json: unknown, resolved: ResolvedTarget, leaf: Leaf): unknown;
  /** Build the provider request for one resolved target (throws 400 if unsupported). */
  build(resolved: ResolvedTarget, leaf: Leaf): UpstreamRequest;
  /**
   * Look at a successful answer before it counts (a stream's first line): a GatewayError
   * makes it the attempt's failure, so retries and fallbacks apply. Leaves the body readable.
   */
  accept?(response: UpstreamResponse, resolved: ResolvedTarget): Promise<void>;
}

/** The part of the request log dispatch touches itself; everything else it returns. */
export type DispatchLog = Pick<RequestFacts, 'metadata' | 'model' | 'rateLimited' | 'budgets'> & { readonly usage?: Usage };

/** What dispatch learnt for the request log; the caller merges it in one place. */
export type DispatchFacts = Required<Pick<RequestFacts, 'provider' | 'retries' | 'attempts' | 'upstreamLatencyMs' | 'metadata'>> &
  Pick<RequestFacts, 'managedProvider' | 'model' | 'cacheStatus'>;

export interface Dispatched {
  /** Provider, routing, latency, cache and metadata facts for the request log. */
  facts: DispatchFacts;
  routing: RoutingResult;
  /** The target that produced the final result. */
  resolved: ResolvedTarget;
  options: GatewayOptions;
  resolvedConfig: ResolvedConfig;
  /** Milliseconds until the caller's timeout, for the body phase (undefined: none). */
  remainingMs(): number | undefined;
  upstreamLatencyMs: number;
  /** x-ratelimit-* of the tightest request policy and x-budget-* of the tightest budget that applied. */
  rateLimitHeaders: Record<string, string>;
  /** Set on cacheable routes: HIT, MISS, REFRESH or DISABLED. */
  cacheStatus?: CacheStatus;
}

export const routingDeps: RoutingDeps = {
  random: Math.random,
  sleep: (ms) => sleep(ms).then(() => undefined),
  backoffBaseMs: 250,
};

/** Forward the caller's listed headers verbatim (never the gateway key). */
function forwarded(req: CallerRequest, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    if (name.startsWith('x-gateway-')) continue;
    const value = req.headers[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** Adapters merge `target.forwardHeaders` themselves (never over their own auth headers). */
async function prepare(adapter: ProviderAdapter, target: ProviderTarget, upstream: UpstreamRequest): Promise<UpstreamRequest> {
  return adapter.sign ? adapter.sign(upstream, target) : upstream;
}

/**
 * Resolve the provider(s), then route: each attempt resolves its leaf (managed provider
 * credentials come from a short in-memory cache), builds, signs and sends the request.
 */
export async function dispatch(spec: DispatchSpec): Promise<Dispatched> {
  const parsed = parseGatewayOptions(spec.req.headers);
  const options: GatewayOptions = { ...parsed, metadata: withEndUser(parsed.metadata, spec.params) };
  let rateLimited = false;
  try {
    return await routed(spec, options, () => (rateLimited = true));
  } catch (err) {
    // Refused before a result (rate limit, config, input guardrail): the log still says for whom and what.
    Object.assign(spec.log, { metadata: options.metadata, model: spec.model, rateLimited });
    throw err;
  }
}

async function routed(spec: DispatchSpec, options: GatewayOptions, onRateLimited: () => void): Promise<Dispatched> {
  const { req, log } = spec;
  warmPricing(req.auth.workspaceId);
  const resolvedConfig = await resolveConfig(req);
  const subject: LimitSubject = {
    workspaceId: req.auth.workspaceId,
    organisationId: req.auth.organisationId,
    apiKeyId: req.auth.keyId,
    provider: await primaryProvider(resolvedConfig.config, req.auth.workspaceId),
    model: spec.model,
    metadata: options.metadata,
    context: req.context,
  };
  const refused = (err: unknown): never => {
    if ((err as { status?: number }).status === 429) onRateLimited();
    throw err;
  };
  // Budgets and rate limits together: one storage round trip before the upstream, not two. A
  // budget's refusal wins, and a request it refuses gives its rate-limit units back.
  const [budgetCheck, limitCheck] = await Promise.allSettled([enforceBudgets(subject), enforceRateLimits(subject)]);
  if (budgetCheck.status === 'rejected') {
    if (limitCheck.status === 'fulfilled') releaseRateLimitUnits(limitCheck.value);
    return refused(budgetCheck.reason);
  }
  if (limitCheck.status === 'rejected') return refused(limitCheck.reason);
  const budgets = budgetCheck.value;
  const grant = limitCheck.value;
  // The request's cost is added to its budgets when its log record is priced.
  if (budgets.buckets.length) log.budgets = budgets;
  if (grant.tokenBuckets.length) {
    // Token policies learn the actual usage once the response (or stream) has ended.
    afterResponse(req.context, () => recordTokenUsage(grant, log.usage?.total_tokens ?? 0));
  }
  const startedAt = Date.now();
  const deadline = options.timeoutMs !== undefined ? startedAt + options.timeoutMs : undefined;
  let last: ResolvedTarget | undefined;
  let upstreamLatencyMs = 0;
  let cacheStatus: CacheStatus | undefined = spec.cacheRoute ? 'DISABLED' : undefined;

  const attempt = async (leaf: Leaf): Promise<AttemptResult> => {
    const resolved = await resolveLeaf(leaf.node, req.auth.workspaceId);
    resolved.target.forwardHeaders = forwarded(req, [
      ...options.forwardHeaders,
      ...lower(leaf.node.forward_headers),
      ...(resolved.adapter.callerHeaders ?? []),
    ]);
    last = resolved;
    await spec.beforeAttempt?.(resolved, leaf);
    const built = spec.build(resolved, leaf);
    const cache = spec.cacheRoute ? planCache(leaf.node, options, req.headers, req.auth.workspaceId, spec.cacheRoute, resolved.adapter.slug, built) : undefined;
    if (cache) {
      const hit = cache.refresh ? undefined : await readCache(cache);
      cacheStatus = hit ? 'HIT' : cache.refresh ? 'REFRESH' : 'MISS';
      if (hit) return { response: hit };
    }
    const upstream = await prepare(resolved.adapter, resolved.target, built);
    const timeoutMs = attemptTimeout(leaf.node, deadline);
    const sent = Date.now();
    try {
      const response = await sendUpstream({
        ...upstream,
        timeoutMs,
        signal: req.context.callerGone ?? req.context.signal,
        trustedHosts: config().trustedHosts,
      });
      upstreamLatencyMs = Date.now() - sent;
      const outcome: UpstreamOutcome = { status: response.status, headers: response.headers, body: response.body };
      if (outcome.status >= 300) return { response: outcome };
      if (spec.readsJson) {
        const { bytes, json } = await readJsonBody(outcome, resolved.adapter.slug);
        outcome.json = json;
        if (spec.translateJson) outcome.translated = spec.translateJson(json, resolved, leaf);
        if (cache) storeBuffered(cache, outcome, bytes, req.context);
        return { response: outcome };
      }
      if (spec.accept) await spec.accept(response, resolved);
      return { response: cache ? storeWhileStreaming(cache, outcome, req.context) : outcome };
    } catch (err) {
      upstreamLatencyMs = Date.now() - sent;
      if (err instanceof GatewayError) return { error: err };
      // The caller left (its signal): no retry, no fallback; the log records a 499.
      if (err instanceof AbortError) throw callerClosedRequest();
      throw err;
    }
  };

  // Units held ahead are refilled once the upstream has answered (a stream's first event is
  // in), in the turn after that answer is passed on: not while the caller waits for it.
  const routing = await routeRequest(
    resolvedConfig.config,
    { metadata: options.metadata, params: spec.params ?? {}, url: { pathname: req.path } },
    attempt,
    routingDeps,
  ).finally(() => {
    if (grant.units) setImmediate(refillRateLimitUnits, grant);
  });
  return {
    facts: {
      provider: last!.adapter.slug,
      managedProvider: last!.managedProvider,
      model: spec.model,
      metadata: options.metadata,
      retries: routing.retries,
      attempts: routing.attempts,
      upstreamLatencyMs,
      cacheStatus,
    },
    routing,
    resolved: last!,
    options,
    resolvedConfig,
    upstreamLatencyMs,
    rateLimitHeaders: budgets.buckets.length ? mergeHeaders(grant.headers, budgets.headers) : grant.headers,
    cacheStatus,
    remainingMs: () => (deadline === undefined ? undefined : Math.max(0, deadline - Date.now())),
  };
}

/** The provider a request will most likely reach: the first leaf of its config. */
async function primaryProvider(node: GatewayConfigSpec, workspaceId: string): Promise<string | undefined> {
  while (node.targets?.length) node = node.targets[0]!;
  const managed = node.virtual_key ?? (node.provider?.startsWith('@') ? node.provider.slice(1) : undefined);
  if (!managed) return node.provider;
  return (await resolveManagedProvider(workspaceId, managed))?.provider;
}

const lower = (names: string[] | undefined) => (names ?? []).map((n) => n.toLowerCase());

function attemptTimeout(node: ConfigNode, deadline: number | undefined): number {
  const fromConfig = node.request_timeout;
  const fromHeader = deadline !== undefined ? Math.max(1, deadline - Date.now()) : undefined;
  const chosen = [fromConfig, fromHeader].filter((v): v is number => v !== undefined);
  return chosen.length ? Math.min(...chosen) : config().defaultUpstreamTimeoutMs;
}

/** Response headers the gateway adds to every proxied or unified answer. */
export function gatewayHeaders(d: Dispatched): Record<string, string> {
  const headers = mergeHeaders(d.rateLimitHeaders);
  headers['x-gateway-provider'] = d.resolved.adapter.slug;
  headers['x-gateway-retry-attempt-count'] = String(d.routing.retries);
  if (d.resolvedConfig.source === 'config') headers['x-gateway-last-used-option-index'] = d.routing.leaf.path;
  if (d.cacheStatus) headers['x-gateway-cache-status'] = d.cacheStatus;
  return headers;
}

/** Apply a leaf's `override_params` to a JSON body (config values win over the caller's). */
export function withOverrides<T extends Record<string, unknown>>(body: T, leaf: Leaf): T {
  return leaf.node.override_params ? { ...body, ...leaf.node.override_params } : body;
}
