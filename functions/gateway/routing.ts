import type { Readable } from 'node:stream';
import type { ConfigNode, GatewayConfigSpec } from '../shared/gateway-config';
import { badRequest, type GatewayError } from '../shared/errors';
import { matches, usesRegex, type ConditionInput } from '../shared/routing-conditions';
import { loadOnce } from '../shared/load-once';
import type { AttemptRecord } from '../spend/request-record';

/** The RE2 engine (150 KB) loads with the first config that uses `$regex`. */
const linearRegex = /* @__PURE__ */ loadOnce(() => import('../shared/linear-regex'));

/** A provider target of the config with the settings it inherited from its parents. */
export interface Leaf {
  node: ConfigNode;
  /** JSON path of the target, e.g. `config.targets[1]` (x-gateway-last-used-option-index). */
  path: string;
}

export interface UpstreamOutcome {
  status: number;
  headers: Record<string, string | string[]>;
  body: Readable;
  /** The parsed body, when the attempt read it already (the body stream is then consumed). */
  json?: unknown;
  /** The route's translation of `json`, when the attempt made it (pipeline.ts `translateJson`). */
  translated?: unknown;
}

/** What one attempt produced: a response (any status) or a gateway error (network, timeout). */
export type AttemptResult = { response: UpstreamOutcome; error?: undefined } | { response?: undefined; error: GatewayError };

export interface RoutingResult {
  result: AttemptResult;
  leaf: Leaf;
  /** Retries of the leaf that answered (x-gateway-retry-attempt-count). */
  retries: number;
  attempts: AttemptRecord[];
}

export interface RoutingDeps {
  random: () => number;
  sleep: (ms: number) => Promise<void>;
  /** Base of the exponential backoff; the n-th retry waits up to base * 2^n (full jitter). */
  backoffBaseMs: number;
}

export const DEFAULT_RETRY_STATUS = [429, 500, 502, 503, 504];
const MAX_BACKOFF_MS = 10_000;
const MAX_RETRY_AFTER_MS = 30_000;

const INHERITED: Array<keyof ConfigNode> = ['retry', 'request_timeout', 'cache', 'forward_headers', 'input_guardrails', 'output_guardrails'];

function inherit(parent: ConfigNode, child: ConfigNode): ConfigNode {
  const merged: ConfigNode = { ...child };
  for (const key of INHERITED) {
    if (merged[key] === undefined && parent[key] !== undefined) (merged as Record<string, unknown>)[key] = parent[key];
  }
  if (parent.override_params) merged.override_params = { ...parent.override_params, ...child.override_params };
  return merged;
}

const statusOf = (r: AttemptResult) => r.response?.status ?? r.error!.status;
const isSuccess = (r: AttemptResult) => r.response !== undefined && r.response.status < 400;

function discard(r: AttemptResult): void {
  r.response?.body.destroy();
}

/** retry-after (seconds or HTTP date) / retry-after-ms, in ms; undefined when absent or unusable. */
export function retryAfterMs(headers: Record<string, string | string[]>): number | undefined {
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const ms = Number(first(headers['retry-after-ms']));
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const raw = first(headers['retry-after']);
  if (raw === undefined) return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Pick a target by weight; weight 0 is never chosen. */
export function pickWeighted<T extends { weight?: number }>(targets: T[], random: () => number): number {
  const weights = targets.map((t) => Math.max(0, t.weight ?? 1));
  const total = weights.reduce((a, b) => a + b, 0);
  let roll = random() * total;
  for (let i = 0; i < weights.length; i++) {
    if (weights[i]! === 0) continue;
    roll -= weights[i]!;
    if (roll < 0) return i;
  }
  return weights.findLastIndex((w) => w > 0);
}

/**
 * Walk a config tree: strategies choose targets, leaves are attempted with retries.
 * Returns as soon as a response head is accepted, so a stream that has started is never
 * retried or replaced (its failures become SSE error events upstream of this module).
 */
export async function routeRequest(
  config: GatewayConfigSpec,
  input: ConditionInput,
  attempt: (leaf: Leaf, attemptNo: number) => Promise<AttemptResult>,
  deps: RoutingDeps,
): Promise<RoutingResult> {
  const attempts: AttemptRecord[] = [];

  async function runLeaf(leaf: Leaf): Promise<RoutingResult> {
    const retry = leaf.node.retry;
    const maxRetries = retry?.attempts ?? 0;
    const retryOn = retry?.on_status_codes ?? DEFAULT_RETRY_STATUS;
    for (let n = 0; ; n++) {
      const started = Date.now();
      const result = await attempt(leaf, n);
      const status = statusOf(result);
      attempts.push({
        path: leaf.path,
        provider: leaf.node.provider ?? leaf.node.virtual_key ?? 'unknown',
        attempt: n,
        status,
        latency_ms: Date.now() - started,
        ...(result.error ? { error: result.error.message } : {}),
      });
      if (isSuccess(result) || n >= maxRetries || !retryOn.includes(status)) return { result, leaf, retries: n, attempts };
      let wait = deps.random() * Math.min(MAX_BACKOFF_MS, deps.backoffBaseMs * 2 ** n);
      if (retry?.use_retry_after_header && result.response) {
        const asked = retryAfterMs(result.response.headers);
        if (asked !== undefined) {
          if (asked > MAX_RETRY_AFTER_MS) return { result, leaf, retries: n, attempts };
          wait = asked;
        }
      }
      discard(result);
      await deps.sleep(wait);
    }
  }

  async function walk(node: ConfigNode, path: string): Promise<RoutingResult> {
    if (!node.targets) return runLeaf({ node, path });
    const children = node.targets.map((child, i) => ({ child: inherit(node, child), path: `${path}.targets[${i}]` }));
    const mode = node.strategy?.mode ?? 'single';
    switch (mode) {
      case 'single':
        return walk(children[0]!.child, children[0]!.path);
      case 'loadbalance': {
        const i = pickWeighted(
          children.map((c) => c.child),
          deps.random,
        );
        return walk(children[i]!.child, children[i]!.path);
      }
      case 'conditional': {
        const conditions = node.strategy?.conditions ?? [];
        const regex = conditions.some((c) => usesRegex(c.query)) ? (await linearRegex()).compileLinearRegex : undefined;
        const chosen = conditions.find((c) => matches(c.query, input, regex))?.then ?? node.strategy?.default;
        const target = children.find((c) => c.child.name === chosen);
        if (!target) {
          throw badRequest('No conditional route matched this request and the config has no `strategy.default`.', 'x-gateway-config', 'no_route_matched');
        }
        return walk(target.child, target.path);
      }
      case 'fallback': {
        const fallbackOn = node.strategy?.on_status_codes;
        let last: RoutingResult | undefined;
        for (const { child, path: childPath } of children) {
          if (last) discard(last.result);
          last = await walk(child, childPath);
          if (isSuccess(last.result)) return last;
          const status = statusOf(last.result);
          if (fallbackOn && !fallbackOn.includes(status)) return last;
        }
        return last!;
      }
    }
  }

  return walk(config, 'config');
}
