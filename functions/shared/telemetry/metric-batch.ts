import { config } from '../config';
import { HOLD_MS, othersInFlight, registerHolder } from './invocations';

/**
 * EMF documents that carry many requests' values: EMF takes an array of up to 100 values per
 * metric, each counted as one sample (so Sum, SampleCount, averages and percentiles are the
 * same as with one document per request). A process serving one request at a time writes
 * each request's document at once; a busy one (./invocations.ts) holds values of the same
 * namespace, dimensions and dimension values for up to HOLD_MS, or until a metric has 100,
 * and writes them as one document: about 30 bytes of log per request instead of 600.
 */

/** [name, unit, value] */
export type MetricValue = [name: string, unit: string, value: number];

/** EMF's limit of values per metric in one document. */
const MAX_VALUES = 100;

interface Batch {
  namespace: string;
  dimensions: string[][];
  fields: Record<string, string | number>;
  timestamp: number;
  metrics: Map<string, { unit: string; values: number[] }>;
}

const batches = new Map<string, Batch>();
let timer: NodeJS.Timeout | undefined;

/** One EMF document as a log line (a metric with one value is written as a number, as Powertools does). */
export function emfLine(batch: Omit<Batch, 'metrics'>, metrics: Iterable<[name: string, { unit: string; values: number[] }]>): string {
  const definitions: Array<{ Name: string; Unit: string }> = [];
  const document: Record<string, unknown> = {
    _aws: {
      Timestamp: batch.timestamp,
      CloudWatchMetrics: [{ Namespace: batch.namespace, Dimensions: batch.dimensions, Metrics: definitions }],
    },
    ...batch.fields,
  };
  for (const [name, { unit, values }] of metrics) {
    definitions.push({ Name: name, Unit: unit });
    document[name] = values.length === 1 ? values[0] : values;
  }
  return `${JSON.stringify(document)}\n`;
}

function take(key: string): string {
  const batch = batches.get(key);
  if (!batch) return '';
  batches.delete(key);
  return emfLine(batch, batch.metrics);
}

function writeAll(): void {
  clearTimeout(timer);
  timer = undefined;
  let text = '';
  for (const key of [...batches.keys()]) text += take(key);
  if (text) process.stdout.write(text);
}

registerHolder(async () => writeAll());

/**
 * Metrics of one event under one set of dimensions. Returns the document to write now (the
 * caller writes it, possibly with its log line, in one write), or '' when the values are
 * held for a shared document, or when metrics are disabled.
 */
export function metricsLine(dimensions: string[][], fields: Record<string, string>, metrics: readonly MetricValue[]): string {
  const { metricsEnabled, metricsNamespace } = config();
  if (!metricsEnabled || metrics.length === 0) return '';
  const now = Date.now();
  if (!othersInFlight()) {
    return emfLine(
      { namespace: metricsNamespace, dimensions, fields, timestamp: now },
      metrics.map(([name, unit, value]) => [name, { unit, values: [value] }] as const),
    );
  }
  const key = `${metricsNamespace}\u0000${JSON.stringify(dimensions)}\u0000${JSON.stringify(fields)}`;
  let batch = batches.get(key);
  if (!batch) {
    batch = { namespace: metricsNamespace, dimensions, fields, timestamp: now, metrics: new Map() };
    batches.set(key, batch);
  }
  let full = false;
  for (const [name, unit, value] of metrics) {
    const metric = batch.metrics.get(name);
    if (metric) metric.values.push(value);
    else batch.metrics.set(name, { unit, values: [value] });
    if ((metric?.values.length ?? 1) >= MAX_VALUES) full = true;
  }
  if (full) return take(key);
  timer ??= setTimeout(writeAll, HOLD_MS).unref();
  return '';
}
