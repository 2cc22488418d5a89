import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

/**
 * EMF metrics: one JSON line per request that CloudWatch turns into metrics without an
 * API call. Dimensions stay low-cardinality (service, route, provider).
 */
const metrics = new Metrics({
  namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? 'AiGateway',
  serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'ai-gateway',
});

export interface RequestMetrics {
  route: string;
  provider?: string;
  status: number;
  latencyMs: number;
  upstreamLatencyMs?: number;
  promptTokens?: number;
  completionTokens?: number;
  cacheHit?: boolean;
  rateLimited?: boolean;
  guardrailBlocked?: boolean;
}

/**
 * One EMF document per request, from the module's Metrics instance: every metric carries
 * the route/provider dimensions. The function is synchronous, so requests interleaved in
 * one process (local runtime) cannot mix their dimensions; publishing clears them.
 *
 * (A `singleMetric()` per request would build a new Metrics object each time, flush one
 * line per metric and drop the dimensions after the first, then warn about an empty
 * buffer: seven synchronous stdout writes per request instead of one.)
 */
export function emitRequestMetrics(m: RequestMetrics): void {
  try {
    metrics.addDimension('route', m.route);
    if (m.provider) metrics.addDimension('provider', m.provider);
    metrics.addMetric('Requests', MetricUnit.Count, 1);
    metrics.addMetric('Errors', MetricUnit.Count, m.status >= 500 ? 1 : 0);
    metrics.addMetric('ClientErrors', MetricUnit.Count, m.status >= 400 && m.status < 500 ? 1 : 0);
    metrics.addMetric('Latency', MetricUnit.Milliseconds, m.latencyMs);
    if (m.upstreamLatencyMs !== undefined) metrics.addMetric('UpstreamLatency', MetricUnit.Milliseconds, m.upstreamLatencyMs);
    if (m.promptTokens !== undefined) metrics.addMetric('PromptTokens', MetricUnit.Count, m.promptTokens);
    if (m.completionTokens !== undefined) metrics.addMetric('CompletionTokens', MetricUnit.Count, m.completionTokens);
    if (m.cacheHit !== undefined) metrics.addMetric('CacheHits', MetricUnit.Count, m.cacheHit ? 1 : 0);
    if (m.rateLimited) metrics.addMetric('RateLimitRejections', MetricUnit.Count, 1);
    if (m.guardrailBlocked) metrics.addMetric('GuardrailBlocks', MetricUnit.Count, 1);
    metrics.publishStoredMetrics();
  } catch (err) {
    // Never leave this request's dimensions or metrics behind for the next one.
    metrics.clearMetrics();
    metrics.clearDimensions();
    throw err;
  }
}
