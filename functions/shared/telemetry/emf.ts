import { config } from '../config';
import { SERVICE_NAME } from './logger';

/**
 * Publish one metric of an event (cost of a request, a budget's threshold crossed) as an
 * EMF line on stdout, CloudWatch's way of taking metrics without an API call. `dimensions`
 * are the sets to publish under (each a list of field names of `fields`; `service` is
 * always a field). Nothing when metrics are disabled. The per-request metrics have their
 * own single-write document (./metrics.ts).
 */
export function publishMetric(name: string, unit: string, value: number, dimensions: string[][], fields: Record<string, string | number>): void {
  const { metricsEnabled, metricsNamespace } = config();
  if (!metricsEnabled) return;
  const document = {
    _aws: { Timestamp: Date.now(), CloudWatchMetrics: [{ Namespace: metricsNamespace, Dimensions: dimensions, Metrics: [{ Name: name, Unit: unit }] }] },
    service: SERVICE_NAME,
    ...fields,
    [name]: value,
  };
  process.stdout.write(`${JSON.stringify(document)}\n`);
}
