import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { config } from '../config';
import { infoLine, SERVICE_NAME, type LogContext } from './logger';

/**
 * EMF metrics: one JSON line per request that CloudWatch turns into metrics without an
 * API call. Dimensions stay low-cardinality (service, route, provider).
 *
 * The settings are Powertools' (POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_METRICS_DISABLED and
 * dev mode), read by config() under Powertools' rules; the per-request document is built here in one step, in exactly the shape Powertools
 * publishes (test/unit/request-telemetry.test.ts holds it to `publishStoredMetrics`).
 * Adding eight metrics one by one and publishing them through Powertools was more than half
 * of a request's telemetry CPU (figures in bench/README.md, "Changes made for speed").
 */

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

type Metric = [name: string, unit: string, value: number];

/** The request's EMF document as a line ending in a newline; '' when metrics are disabled. */
export function requestMetricsLine(m: RequestMetrics): string {
  const { metricsEnabled, metricsNamespace } = config();
  if (!metricsEnabled) return '';
  const metrics: Metric[] = [
    ['Requests', MetricUnit.Count, 1],
    ['Errors', MetricUnit.Count, m.status >= 500 ? 1 : 0],
    ['ClientErrors', MetricUnit.Count, m.status >= 400 && m.status < 500 ? 1 : 0],
    ['Latency', MetricUnit.Milliseconds, m.latencyMs],
  ];
  if (m.upstreamLatencyMs !== undefined) metrics.push(['UpstreamLatency', MetricUnit.Milliseconds, m.upstreamLatencyMs]);
  if (m.promptTokens !== undefined) metrics.push(['PromptTokens', MetricUnit.Count, m.promptTokens]);
  if (m.completionTokens !== undefined) metrics.push(['CompletionTokens', MetricUnit.Count, m.completionTokens]);
  if (m.cacheHit !== undefined) metrics.push(['CacheHits', MetricUnit.Count, m.cacheHit ? 1 : 0]);
  if (m.rateLimited) metrics.push(['RateLimitRejections', MetricUnit.Count, 1]);
  if (m.guardrailBlocked) metrics.push(['GuardrailBlocks', MetricUnit.Count, 1]);

  const dimensions: Record<string, string> = { service: SERVICE_NAME, route: m.route };
  if (m.provider) dimensions.provider = m.provider;
  const document: Record<string, unknown> = {
    _aws: {
      Timestamp: Date.now(),
      CloudWatchMetrics: [{ Namespace: metricsNamespace, Dimensions: [Object.keys(dimensions)], Metrics: metrics.map(([Name, Unit]) => ({ Name, Unit })) }],
    },
    ...dimensions,
  };
  for (const [name, , value] of metrics) document[name] = value;
  return `${JSON.stringify(document)}\n`;
}

/**
 * A request's log line and its EMF document, in one synchronous stdout write (each line is
 * its own CloudWatch log event, as when Powertools prints them one by one).
 */
export function writeRequestTelemetry(message: string, fields: Record<string, unknown>, m: RequestMetrics, ctx: LogContext): void {
  const text = infoLine(message, fields, ctx) + requestMetricsLine(m);
  if (text) process.stdout.write(text);
}
