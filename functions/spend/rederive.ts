import type { RequestLogRecord } from './request-record';
import { logReadPartitions } from '../shared/db/log-keys';
import { config } from '../shared/config';
import { ddb, tableName } from '../shared/db/client';
import { batchWrite, updateItem } from '../shared/db/ops';
import { counterTtl } from './counters';
import {
  addAmounts,
  amountsOf,
  COUNTER_ATTRIBUTES,
  countersOf,
  hourRangeBounds,
  spendShardPk,
  zeroAmounts,
  type CounterKey,
  type SpendAmounts,
} from './dimensions';
import { DAY_SECONDS, HOUR_SECONDS, floorTo, hourLabel } from './periods';

/**
 * Spend counters re-derived from the request-log records, after a process that held
 * increments died without writing them (a crash, `kill -9`): every counter of the hours
 * that `fromSeconds` to `toSeconds` touch is set to what the stored records of those hours
 * add up to (in shard 0; the other shards' counters of those hours are deleted). The
 * counters count exactly the stored records, so a record that survived the
 * crash is counted, once. Run while no process writes these counters (the local runtime
 * runs it at start, before it serves). Hours whose records may have expired
 * (`REQUEST_LOG_TTL_DAYS`) are left as they are: their counters outlive the records.
 */

/** A record's id is taken when its request starts; it is created at most this long after (Lambda's limit). */
const LONGEST_REQUEST_SECONDS = 900;
const MAX_PARALLEL_UPDATES = 16;
const MAX_PARALLEL_READS = 8;

/** Every workspace id (a scan of the control table's workspace items: for a local table). */
async function workspaceIds(): Promise<string[]> {
  const ids: string[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await ddb.scan({
      TableName: tableName('control'),
      FilterExpression: 'sk = :ws',
      ExpressionAttributeValues: { ':ws': 'WS' },
      ProjectionExpression: 'id',
      ExclusiveStartKey: start,
    });
    for (const item of page.Items ?? []) if (typeof item.id === 'string') ids.push(item.id);
    start = page.LastEvaluatedKey;
  } while (start);
  return ids;
}

/** A workspace's records created in [from, to): each of its log partitions (a few at a time) newest first, until ids are too old to hold any. */
async function recordsBetween(workspaceId: string, from: number, to: number): Promise<RequestLogRecord[]> {
  const records: RequestLogRecord[] = [];
  const partitions = logReadPartitions(workspaceId);
  let next = 0;
  const lane = async () => {
    while (next < partitions.length) {
      const partition = partitions[next++]!;
      let start: Record<string, unknown> | undefined;
      let older = false;
      do {
        const page = await ddb.query({
          TableName: tableName('logs'),
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': partition },
          ScanIndexForward: false,
          ExclusiveStartKey: start,
        });
        for (const item of (page.Items ?? []) as unknown as RequestLogRecord[]) {
          if (item.created_at >= from && item.created_at < to) records.push(item);
          else if (item.created_at < from - LONGEST_REQUEST_SECONDS) older = true;
        }
        start = page.LastEvaluatedKey;
      } while (start && !older);
    }
  };
  await Promise.all(Array.from({ length: MAX_PARALLEL_READS }, lane));
  return records;
}

/** Delete the counters of shards 1.. of the partitions `pks` in the hours [from, to): their sums go to shard 0. */
async function clearOtherShards(pks: ReadonlySet<string>, from: number, to: number): Promise<void> {
  const { lo, hi } = hourRangeBounds(hourLabel(from), hourLabel(to - HOUR_SECONDS));
  const partitions = [...pks].flatMap((pk) => Array.from({ length: config().counterShards - 1 }, (_, i) => spendShardPk(pk, i + 1)));
  let i = 0;
  const lane = async () => {
    while (i < partitions.length) {
      const pk = partitions[i++]!;
      let start: Record<string, unknown> | undefined;
      do {
        const page = await ddb.query({
          TableName: tableName('usage'),
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :lo AND :hi',
          ExpressionAttributeValues: { ':pk': pk, ':lo': lo, ':hi': hi },
          ProjectionExpression: 'pk, sk',
          ExclusiveStartKey: start,
        });
        const keys = (page.Items ?? []) as Array<{ pk: string; sk: string }>;
        if (keys.length)
          await batchWrite(
            'usage',
            keys.map((key) => ({ DeleteRequest: { Key: { pk: key.pk, sk: key.sk } } })),
          );
        start = page.LastEvaluatedKey;
      } while (start);
    }
  };
  await Promise.all(Array.from({ length: Math.min(MAX_PARALLEL_UPDATES, partitions.length) }, lane));
}

/** Set every counter of the hours from `fromSeconds` to `toSeconds` to the sums of the stored records; resolves with how many were set. */
export async function rederiveSpendCounters(fromSeconds: number, toSeconds: number): Promise<number> {
  const recordsKeptSince = Date.now() / 1000 - (config().requestLogTtlDays - 1) * DAY_SECONDS;
  const from = floorTo(Math.max(fromSeconds, recordsKeptSince + HOUR_SECONDS), HOUR_SECONDS);
  const to = floorTo(toSeconds, HOUR_SECONDS) + HOUR_SECONDS;
  if (from >= to) return 0;
  const sums = new Map<string, { key: CounterKey; amounts: SpendAmounts; ttl: number }>();
  for (const workspaceId of await workspaceIds()) {
    for (const record of await recordsBetween(workspaceId, from, to)) {
      const ttl = counterTtl(floorTo(record.created_at, HOUR_SECONDS), config().spendRetentionDays);
      const amounts = amountsOf(record);
      for (const key of countersOf(record)) {
        const id = `${key.pk}\u0000${key.sk}`;
        const sum = sums.get(id) ?? sums.set(id, { key, amounts: zeroAmounts(), ttl }).get(id)!;
        addAmounts(sum.amounts, amounts);
      }
    }
  }
  const counters = [...sums.values()];
  await clearOtherShards(new Set(counters.map((c) => c.key.pk)), from, to);
  let i = 0;
  const lane = async () => {
    while (i < counters.length) {
      const { key, amounts, ttl } = counters[i++]!;
      const set: Record<string, number> = { ttl };
      for (const attribute of COUNTER_ATTRIBUTES) set[attribute] = amounts[attribute];
      await updateItem('usage', key, { set });
    }
  };
  await Promise.all(Array.from({ length: Math.min(MAX_PARALLEL_UPDATES, counters.length) }, lane));
  return counters.length;
}
