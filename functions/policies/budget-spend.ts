import { addInOrder, addOnce, getItem, putNew, type WriteMarker } from '../shared/db/ops';
import { log } from '../shared/telemetry/logger';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { publishMetric } from '../shared/telemetry/emf';
import type { BudgetBucket, BudgetGrant } from './budget-model';
import { counterIdOf, learnCount, whileAdding } from './known-counters';
import { NANO } from './budgets';
import type { LimitSubject } from './limiter';
import { shardPk } from './shards';

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
 * How a journaled charge is made exactly once (functions/gateway/log-journal.ts): its
 * writer's marker in each counter it adds to. `replay`: the charge is re-sent from the
 * journal of a dead process; one found already applied raised its events then.
 */
export interface ChargeMarker extends WriteMarker {
  replay?: boolean;
}

/**
 * Add the cost of a group of requests (those whose log records are written together) to
 * every budget they were admitted under: one increment per budget period, their costs
 * summed, and one event for each threshold (and the limit) an increment crossed. With a
 * marker, an increment the counter has already seen from its writer is not applied again.
 */
export async function chargeBudgets(charges: readonly BudgetCharge[], marker?: ChargeMarker): Promise<void> {
  const sums = new Map<string, { bucket: BudgetBucket; nusd: number; charge: BudgetCharge }>();
  for (const charge of charges) {
    if (charge.costUsd === null || !(charge.costUsd > 0)) continue;
    const nusd = Math.round(charge.costUsd * NANO);
    for (const bucket of charge.grant.buckets) {
      const id = counterIdOf(bucket);
      const sum = sums.get(id);
      if (sum) sum.nusd += nusd;
      else sums.set(id, { bucket, nusd, charge });
    }
  }
  await Promise.all([...sums.values()].map(({ bucket, nusd, charge }) => chargeBucket(bucket, nusd, charge, marker)));
}

/** A budget counter's item: its spend, and the markers of the writers that charged it. */
type Counter = { spent_nusd: number } & Record<string, unknown>;

/** Add `nusd` to one budget period, and emit one event for each threshold (and the limit) the increment crossed. */
async function chargeBucket(bucket: BudgetBucket, nusd: number, subject: BudgetCharge, marker: ChargeMarker | undefined): Promise<void> {
  const key = { pk: bucket.pk, sk: bucket.sk };
  const counterId = counterIdOf(key);
  const sentAt = Date.now();
  let applied = true;
  const after = await whileAdding(counterId, nusd, async () => {
    const spec = { set: bucket.ttl === undefined ? {} : { ttl: bucket.ttl }, add: { spent_nusd: nusd } };
    // Undefined: an increment already applied (a retry whose answer was lost, or a replay); read what it left.
    let updated = await (marker ? addInOrder<Counter>('usage', key, spec, marker) : addOnce<Counter>('usage', key, spec));
    if (!updated) {
      applied = false;
      updated = await getItem<Counter>('usage', key, true);
      if (marker && !marker.replay && updated?.[marker.attr] !== marker.seq) {
        // Refused, live, by a marker this writer never set: a later seq left by an earlier
        // process under the same attribute (the writer's kept start was lost and the clock has
        // gone back since, log-journal.ts `writerStart`). Charged all the same.
        log.warn('budget charge refused by a later marker; charged without it', { counter: key.pk, marker: marker.attr }, subject.context);
        updated = (await addOnce<Counter>('usage', key, spec)) ?? (await getItem<Counter>('usage', key, true));
        applied = true;
      }
    }
    const total = Number(updated?.spent_nusd ?? 0);
    // The new total is the freshest spend this container knows: its next admission may need no read.
    learnCount(counterId, total, sentAt);
    return total;
  });
  if (!applied && marker?.replay) return;
  const before = after - nusd;
  const { budget, sharded } = bucket;
  for (const threshold of [...budget.thresholds.filter((t) => t < 1), 1]) {
    if (!sharded) {
      const line = Math.round(budget.limitNusd * threshold);
      if (before < line && after >= line) emitCrossing(bucket, threshold, after, subject);
      continue;
    }
    // A sharded budget: this shard crossed its share of the line; the event is the budget's,
    // once the shards' sum has crossed the whole line, claimed once per period and threshold.
    const shardLine = Math.round(sharded.sliceNusd * threshold);
    if (before < shardLine && after >= shardLine) await emitShardedCrossing(bucket, sharded, threshold, subject);
  }
}

async function emitShardedCrossing(
  bucket: BudgetBucket,
  sharded: NonNullable<BudgetBucket['sharded']>,
  threshold: number,
  subject: BudgetCharge,
): Promise<void> {
  const items = await Promise.all(
    Array.from({ length: sharded.shards }, (_, shard) =>
      getItem<{ spent_nusd?: number }>('usage', { pk: shardPk(sharded.basePk, shard), sk: bucket.sk }, true),
    ),
  );
  const total = items.reduce((sum, item) => sum + Number(item?.spent_nusd ?? 0), 0);
  if (total < Math.round(bucket.budget.limitNusd * threshold)) return;
  const claim = { pk: sharded.basePk, sk: `alert#${bucket.sk}#${threshold}`, ...(bucket.ttl === undefined ? {} : { ttl: bucket.ttl }) };
  if (await putNew('usage', claim)) emitCrossing(bucket, threshold, total, subject);
}

function emitCrossing(bucket: BudgetBucket, threshold: number, spentNusd: number, subject: BudgetCharge): void {
  const { budget } = bucket;
  log.warn(
    threshold === 1 ? 'budget exhausted' : 'budget threshold crossed',
    {
      budget_id: budget.id,
      budget_name: budget.name,
      threshold,
      limit_usd: budget.limitUsd,
      spent_usd: spentNusd / NANO,
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
