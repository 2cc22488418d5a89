import { addOnce, getItem } from '../shared/db/ops';
import { log } from '../shared/telemetry/logger';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { publishMetric } from '../shared/telemetry/emf';
import type { BudgetBucket, BudgetGrant } from './budget-model';
import { NANO } from './budgets';
import type { LimitSubject } from './limiter';

/**
 * The after-response half of budgets (./budgets.ts): a request's cost is charged in the
 * same turn as its log record's write is sent (functions/gateway/request-log.ts), so a
 * crash loses both or neither; in the pricing chunk (functions/spend/load.ts), outside
 * the gateway's cold start.
 */

/** One request's charge: its cost, to every budget it was admitted under. */
export interface BudgetCharge {
  grant: BudgetGrant;
  costUsd: number | null;
  workspaceId: string;
  context?: LimitSubject['context'];
}

/**
 * Add the cost of a group of requests (those whose log records are written together) to
 * every budget they were admitted under: one increment per budget period, their costs
 * summed, and one event for each threshold (and the limit) an increment crossed.
 */
export async function chargeBudgets(charges: readonly BudgetCharge[]): Promise<void> {
  const sums = new Map<string, { bucket: BudgetBucket; nusd: number; charge: BudgetCharge }>();
  for (const charge of charges) {
    if (charge.costUsd === null || !(charge.costUsd > 0)) continue;
    const nusd = Math.round(charge.costUsd * NANO);
    for (const bucket of charge.grant.buckets) {
      const id = `${bucket.pk}\u0000${bucket.sk}`;
      const sum = sums.get(id);
      if (sum) sum.nusd += nusd;
      else sums.set(id, { bucket, nusd, charge });
    }
  }
  await Promise.all([...sums.values()].map(({ bucket, nusd, charge }) => chargeBucket(bucket, nusd, charge)));
}

/** Add `nusd` to one budget period, and emit one event for each threshold (and the limit) the increment crossed. */
async function chargeBucket(bucket: BudgetBucket, nusd: number, subject: BudgetCharge): Promise<void> {
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
}
