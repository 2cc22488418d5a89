import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { infoLine, SERVICE_NAME, type LogContext } from './logger';
import { metricsLine, type MetricValue } from './metric-batch';
import { othersInFlight, registerHolder } from './invocations';

/**
 * EMF metrics: JSON lines that CloudWatch turns into metrics without an API call, one per
 * request or, in a process serving many requests at once, one per second and set of
 * dimensions (./metric-batch.ts). Dimensions stay low-cardinality (service, route, provider).
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

/** The request's EMF document as a line ending in a newline; '' when metrics are disabled or the values are held for a shared document (./metric-batch.ts). */
export function requestMetricsLine(m: RequestMetrics): string {
  const metrics: MetricValue[] = [
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
  return metricsLine([Object.keys(dimensions)], dimensions, metrics);
}

/**
 * How long a busy process holds request lines (and how much text: 64 K characters) before one write
 * takes them all: a synchronous stdout write per request was a measurable part of a
 * request's CPU at a steady rate (bench/README.md, "Session 27"). Also what a crash of a busy
 * process can lose of them; the request-log records are stored apart, and are not affected.
 */
export const LINE_HOLD_MS = 100;
const MAX_HELD_LINE_CHARS = 64 * 1024;

let heldLines = '';
let lineTimer: NodeJS.Timeout | undefined;

function writeHeldLines(): void {
  clearTimeout(lineTimer);
  lineTimer = undefined;
  if (!heldLines) return;
  const text = heldLines;
  heldLines = '';
  process.stdout.write(text);
}

registerHolder(async () => writeHeldLines());

/**
 * A request's log line and its EMF document (each its own line, so its own CloudWatch log
 * event, as when Powertools prints them one by one). A process serving one request at a
 * time writes them at once, in one synchronous write; a busy one (./invocations.ts) holds
 * them with other requests' lines for up to LINE_HOLD_MS, and the invocation that leaves it
 * idle writes them, as it does held EMF values.
 */
export function writeRequestTelemetry(message: string, fields: Record<string, unknown>, m: RequestMetrics, ctx: LogContext): void {
  const document = requestMetricsLine(m);
  const text = infoLine(message, fields, ctx) + document;
  if (!text) return;
  // Held lines go first, so a process's request lines keep their order. A metrics document
  // returned here is complete (100 values, or a process serving one invocation): it goes at once.
  heldLines += text;
  if (!othersInFlight() || document) {
    writeHeldLines();
    return;
  }
  if (heldLines.length >= MAX_HELD_LINE_CHARS) writeHeldLines();
  else lineTimer ??= setTimeout(writeHeldLines, LINE_HOLD_MS).unref();
}

/** An MCP tool call's metrics, per server: `ToolCalls`, `ToolErrors` (an error, refusal or timeout, or a result with `isError`) and `ToolLatency`. */
export function writeToolCallMetrics(m: { server: string; failed: boolean; latencyMs: number }): void {
  const text = metricsLine([['service', 'mcp_server']], { service: SERVICE_NAME, mcp_server: m.server }, [
    ['ToolCalls', MetricUnit.Count, 1],
    ['ToolErrors', MetricUnit.Count, m.failed ? 1 : 0],
    ['ToolLatency', MetricUnit.Milliseconds, m.latencyMs],
  ]);
  if (text) process.stdout.write(text);
}
