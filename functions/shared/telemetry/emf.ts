import { config } from '../config';
import { SERVICE_NAME } from './logger';
import { emfLine, metricsLine } from './metric-batch';

/**
 * Publish one metric of an event (cost of a request, a budget's threshold crossed) as an
 * EMF line on stdout, CloudWatch's way of taking metrics without an API call. `dimensions`
 * are the sets to publish under (each a list of field names of `fields`; `service` is
 * always a field). Nothing when metrics are disabled. Written at once, never held: events
 * are rare. The per-request metrics have their own document (./metrics.ts).
 */
export function publishMetric(name: string, unit: string, value: number, dimensions: string[][], fields: Record<string, string | number>): void {
  const { metricsEnabled, metricsNamespace } = config();
  if (!metricsEnabled) return;
  const document = { namespace: metricsNamespace, dimensions, fields: { service: SERVICE_NAME, ...fields }, timestamp: Date.now() };
  process.stdout.write(emfLine(document, [[name, { unit, values: [value] }]]));
}

/**
 * A metric that many requests publish (a request's cost): under one set of dimensions, held
 * with other requests' values in a busy process (./metric-batch.ts), written at once otherwise.
 */
export function publishRequestMetric(name: string, unit: string, value: number, dimensions: string[], fields: Record<string, string>): void {
  const line = metricsLine([dimensions], { service: SERVICE_NAME, ...fields }, [[name, unit, value]]);
  if (line) process.stdout.write(line);
}
