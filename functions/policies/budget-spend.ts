import { addOnce, getItem } from '../shared/db/ops';
import { log } from '../shared/telemetry/logger';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { publishMetric } from '../shared/telemetry/emf';
import { NANO, type BudgetGrant } from './budgets';
import type { LimitSubject } from './limiter';

/**
 * The after-response half of budgets (./budgets.ts): charged once a request's record is
 * priced, in the pricing chunk (functions/spend/load.ts), outside the gateway's cold start.
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
      const key = { pk: bucket.pk, sk: bucket.sk };
      // Undefined: a retry of an increment already applied (its answer was lost); read what it left.
      const updated =
        (await addOnce<{ spent_nusd: number }>('usage', key, { set: bucket.ttl === undefined ? {} : { ttl: bucket.ttl }, add: { spent_nusd: nusd } })) ??
        (await getItem<{ spent_nusd: number }>('usage', key, true));
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
          // By workspace and budget, and in total (for one alarm over every budget).
          publishMetric('BudgetThresholdCrossed', MetricUnit.Count, 1, [['service', 'workspace', 'budget'], ['service']], {
            workspace: subject.workspaceId,
            budget: budget.id,
            threshold,
          });
        }
      }
    }),
  );
}
