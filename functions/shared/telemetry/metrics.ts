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

export function emitRequestMetrics(m: RequestMetrics): void {
  const single = metrics.singleMetric();
  single.addDimension('route', m.route);
  if (m.provider) single.addDimension('provider', m.provider);
  single.addMetric('Requests', MetricUnit.Count, 1);
  single.addMetric('Errors', MetricUnit.Count, m.status >= 500 ? 1 : 0);
  single.addMetric('ClientErrors', MetricUnit.Count, m.status >= 400 && m.status < 500 ? 1 : 0);
  single.addMetric('Latency', MetricUnit.Milliseconds, m.latencyMs);
  if (m.upstreamLatencyMs !== undefined) single.addMetric('UpstreamLatency', MetricUnit.Milliseconds, m.upstreamLatencyMs);
  if (m.promptTokens !== undefined) single.addMetric('PromptTokens', MetricUnit.Count, m.promptTokens);
  if (m.completionTokens !== undefined) single.addMetric('CompletionTokens', MetricUnit.Count, m.completionTokens);
  if (m.cacheHit !== undefined) single.addMetric('CacheHits', MetricUnit.Count, m.cacheHit ? 1 : 0);
  if (m.rateLimited) single.addMetric('RateLimitRejections', MetricUnit.Count, 1);
  if (m.guardrailBlocked) single.addMetric('GuardrailBlocks', MetricUnit.Count, 1);
  single.publishStoredMetrics();
}
