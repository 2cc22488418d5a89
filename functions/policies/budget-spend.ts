import { updateItem } from '../shared/db/ops';
import { log } from '../shared/telemetry/logger';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { config } from '../shared/config';
import { SERVICE_NAME } from '../shared/telemetry/logger';
import { NANO, type BudgetGrant } from './budgets';
import type { LimitSubject } from './limiter';

/**
 * The after-response half of budgets (./budgets.ts): a module of its own, loaded with the
 * first request that has a budget to charge, so it is not part of the gateway's cold start.
 */

/**
 * Add a request's cost to every budget it was admitted under, and emit one event for each
 * threshold (and the limit) the increment crossed. A no-op without buckets or cost.
 */
export async function recordBudgetSpend(
  grant: BudgetGrant,
  costUsd: number | null,
  subject: { workspaceId: string; context?: LimitSubject['context'] },
): Promise<void> {
  if (!grant.buckets.length || costUsd === null || !(costUsd > 0)) return;
  const nusd = Math.round(costUsd * NANO);
  await Promise.all(
    grant.buckets.map(async (bucket) => {
      const updated = await updateItem<{ spent_nusd: number }>(
        'usage',
        { pk: bucket.pk, sk: bucket.sk },
        { set: bucket.ttl === undefined ? {} : { ttl: bucket.ttl }, add: { spent_nusd: nusd } },
      );
      const after = Number(updated?.spent_nusd ?? 0);
      const before = after - nusd;
      const { budget } = bucket;
      for (const threshold of [...budget.thresholds.filter((t) => t < 1), 1]) {
        const line = Math.round(budget.limitNusd * threshold);
        if (before < line && after >= line) {
          log.warn(
            threshold === 1 ? 'budget exhausted' : 'budget threshold crossed',
            {
              budget_id: budget.id,
              budget_name: budget.name,
              threshold,
              limit_usd: budget.limitUsd,
              spent_usd: after / NANO,
              period: budget.period,
              period_key: bucket.sk,
            },
            subject.context,
          );
          const metric = budgetEventLine(subject.workspaceId, budget.id, threshold);
          if (metric) process.stdout.write(metric);
        }
      }
    }),
  );
}

/**
 * One `BudgetThresholdCrossed` EMF document (dimensions service+workspace+budget, and
 * service alone for one alarm over every budget); '' when metrics are disabled.
 */
function budgetEventLine(workspaceId: string, budgetId: string, threshold: number): string {
  const { metricsEnabled, metricsNamespace } = config();
  if (!metricsEnabled) return '';
  const document = {
    _aws: {
      Timestamp: Date.now(),
      CloudWatchMetrics: [
        {
          Namespace: metricsNamespace,
          Dimensions: [['service', 'workspace', 'budget'], ['service']],
          Metrics: [{ Name: 'BudgetThresholdCrossed', Unit: MetricUnit.Count }],
        },
      ],
    },
    service: SERVICE_NAME,
    workspace: workspaceId,
    budget: budgetId,
    threshold,
    BudgetThresholdCrossed: 1,
  };
  return `${JSON.stringify(document)}\n`;
}
