import { config } from '../shared/config';
import { addOnce } from '../shared/db/ops';
import { heldCounterWriter, type PendingIncrement as HeldIncrement } from '../shared/db/held-counters';
import type { TableName } from '../shared/tables';
import { randomShard } from '../policies/shards';
import type { RequestLogRecord } from './request-record';
import { amountsOf, COUNTER_ATTRIBUTES, countersOf, spendShardPk, type SpendAmounts } from './dimensions';
import { DAY_SECONDS, HOUR_SECONDS, floorTo } from './periods';

export type PendingIncrement = HeldIncrement<SpendAmounts>;

/**
 * One counter's summed increments, added once even if the client retries (`addOnce`), to one
 * of its shards picked at random per write: at 10,000 writes a second of one counter, each of
 * the 32 default shards takes about 313.
 */
async function addToCounter(table: TableName, item: PendingIncrement): Promise<void> {
  const add: Record<string, number> = {};
  for (const attribute of COUNTER_ATTRIBUTES) if (item.amounts[attribute] !== 0) add[attribute] = item.amounts[attribute];
  add.requests ??= 0;
  const key = { pk: spendShardPk(item.key.pk, randomShard(config().counterShards)), sk: item.key.sk };
  await addOnce(table, key, { set: { ttl: item.ttl }, add });
}

/** The spend counters' held writer (../shared/db/held-counters.ts); `write` is injected by tests. */
export const counterWriter = (table: TableName, write: (table: TableName, item: PendingIncrement) => Promise<void> = addToCounter) =>
  heldCounterWriter<SpendAmounts>('spend counters', (item) => write(table, item));

// Pure: bundles that import this module without recording spend (the admin reports) drop the writer.
const addToCounters = /* @__PURE__ */ counterWriter('usage');

/** When a counter of the hour starting at `hourStart` expires: SPEND_RETENTION_DAYS after the hour ends. */
export const counterTtl = (hourStart: number, retentionDays: number) => hourStart + HOUR_SECONDS + retentionDays * DAY_SECONDS;

/**
 * Add one request to the spend counters of its hour: the workspace total, its key, provider,
 * model and each counted metadata key (functions/spend/dimensions.ts). Called by the request
 * log's after-response task once the record is stored, so the counters count exactly the
 * stored records; resolves when the increments are written.
 */
export function recordSpend(record: RequestLogRecord): Promise<void> {
  const ttl = counterTtl(floorTo(record.created_at, HOUR_SECONDS), config().spendRetentionDays);
  return addToCounters(countersOf(record), amountsOf(record), ttl);
}
