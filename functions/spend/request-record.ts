import type { BudgetGrant } from '../policies/budget-model';
import type { Usage } from '../providers/types';

/**
 * The request log's shapes: the facts the pipeline gathers about a request
 * (gateway/request-log.ts) and the record it stores, which spend prices, counts and
 * re-derives from. They sit here, below the pipeline, so spend reads them without
 * importing the gateway that writes them.
 */

/** One attempt of a routed request, as its record keeps it. */
export interface AttemptRecord {
  path: string;
  provider: string;
  attempt: number;
  status: number;
  latency_ms: number;
  error?: string;
}

export type PriceSource = 'catalogue' | 'override' | 'cache' | 'not_billed';

export interface RequestCost {
  cost_usd: number | null;
  price_source: PriceSource | null;
  pricing_unknown: boolean;
  /** On cache hits: what the request would have cost (null when that price is unknown). */
  cost_saved_usd?: number | null;
}

/** Facts about one request, filled in as it proceeds; read once the response has been sent. */
export interface RequestFacts {
  route: string;
  provider?: string;
  managedProvider?: string;
  model?: string;
  status: number;
  stream: boolean;
  usage?: Usage;
  cacheStatus?: 'HIT' | 'MISS' | 'REFRESH' | 'DISABLED';
  retries: number;
  attempts: AttemptRecord[];
  upstreamLatencyMs?: number;
  metadata: Record<string, string>;
  /** Set when a stream ended with an error event instead of [DONE]. */
  streamError?: string;
  /** Extra fields a feature adds (prompt id/version, rerank span ids, guardrail results). */
  extra?: Record<string, unknown>;
  rateLimited?: boolean;
  guardrailBlocked?: boolean;
  /** Set once priced (before a non-streamed response is sent, for its `x-gateway-cost`). */
  cost?: RequestCost;
  /** The budgets the request was admitted under: its cost is added to them with its record's write. */
  budgets?: BudgetGrant;
}

export interface RequestLogRecord {
  object: 'request_log';
  id: string;
  trace_id: string;
  workspace_id: string;
  organisation_id: string;
  api_key_id: string;
  method: string;
  path: string;
  route: string;
  provider: string | null;
  managed_provider: string | null;
  model: string | null;
  status: number;
  stream: boolean;
  latency_ms: number;
  upstream_latency_ms: number | null;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  cache_status: string | null;
  retry_count: number;
  attempts: AttemptRecord[];
  metadata: Record<string, string>;
  error: string | null;
  /** USD, in whole nano-dollars; null when the price is unknown. */
  cost_usd: number | null;
  price_source: PriceSource | null;
  pricing_unknown: boolean;
  /** Cache hits: what the request would have cost. */
  cost_saved_usd?: number | null;
  created_at: number;
  [extra: string]: unknown;
}
