import { config } from '../shared/config';
import { ddb, tableName } from '../shared/db/client';
import { badRequest } from '../shared/errors';
import {
  addAmounts,
  COUNTER_ATTRIBUTES,
  hourRangeBounds,
  METADATA_DIMENSION_PREFIX,
  parseCellSortKey,
  parseCounterSortKey,
  spendPartition,
  spendShardPk,
  zeroAmounts,
  type BaseDimension,
  type Dimension,
  type SpendAmounts,
  type SpendPartition,
} from './dimensions';
import { floorTo, GRANULARITY_SECONDS, hourLabel, HOUR_SECONDS, isoSeconds, parseHourLabel, type Granularity, type ReportRange } from './periods';

const SPEND_TABLE = 'usage';

/**
 * At most this many counters summed by one report (about 15 MB read): a high-cardinality
 * group (metadata._user over a year) is refused with a 400 rather than timing out.
 */
export const MAX_REPORT_COUNTERS = 100_000;

/** At most this many Queries (workspace, partition and shard) at once. */
const MAX_PARALLEL_QUERIES = 16;

export interface SpendRow {
  period_start: string;
  group: string | null;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost_usd: number;
  unpriced_requests: number;
}

export type SpendTotals = Omit<SpendRow, 'period_start' | 'group'>;

export interface SpendQuery {
  dimension: Dimension;
  granularity: Granularity;
  range: ReportRange;
  /** The workspaces whose counters are summed (one, or every workspace of an organisation). */
  workspaceIds: readonly string[];
  nowSeconds: number;
  /** Default MAX_REPORT_COUNTERS. */
  maxCounters?: number;
}

export interface SpendReport {
  data: SpendRow[];
  totals: SpendTotals;
}

interface CounterItem extends Partial<Record<(typeof COUNTER_ATTRIBUTES)[number], number>> {
  sk: string;
}

/** One workspace's counters of one shard of one partition over the range's hours: one Query, paged. */
async function readCounters(
  workspaceId: string,
  partition: SpendPartition,
  shard: number,
  range: ReportRange,
  nowSeconds: number,
  budget: { left: number; max: number },
): Promise<CounterItem[]> {
  const { lo, hi } = hourRangeBounds(hourLabel(range.from), hourLabel(range.to - HOUR_SECONDS));
  const items: CounterItem[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await ddb.query({
      TableName: tableName(SPEND_TABLE),
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :lo AND :hi',
      // Counters past their TTL stay until DynamoDB deletes them: they are not counted.
      FilterExpression: '#ttl > :now',
      ExpressionAttributeNames: { '#ttl': 'ttl' },
      ExpressionAttributeValues: { ':pk': spendShardPk(spendPartition(workspaceId, partition), shard), ':lo': lo, ':hi': hi, ':now': nowSeconds },
      ExclusiveStartKey: start,
    });
    items.push(...((out.Items ?? []) as unknown as CounterItem[]));
    budget.left -= out.ScannedCount ?? out.Items?.length ?? 0;
    if (budget.left < 0) {
      throw badRequest(
        partition === 'cell'
          ? `This report would sum more than ${budget.max} counters: narrow \`from\`/\`to\` (a report by workspace, key, provider or model reads one counter per hour and key-provider-model pair).`
          : `This report would sum more than ${budget.max} counters: narrow \`from\`/\`to\`, or group by a dimension with fewer values.`,
        'from',
        'report_too_large',
      );
    }
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

async function inLanes<T, R>(inputs: readonly T[], lanes: number, run: (input: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(inputs.length);
  let i = 0;
  const lane = async () => {
    while (i < inputs.length) {
      const index = i++;
      results[index] = await run(inputs[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(lanes, inputs.length) }, lane));
  return results;
}

const isBaseDimension = (dimension: Dimension): dimension is BaseDimension => !dimension.startsWith(METADATA_DIMENSION_PREFIX);

const withCost = ({ cost_nano_usd, ...rest }: SpendAmounts): SpendTotals => ({ ...rest, cost_usd: cost_nano_usd / 1e9 });

const compareGroups = (a: string | null, b: string | null) => (a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1);

/**
 * Sum the hourly counters of the workspaces into buckets of the granularity, one row per
 * (bucket, group) that has requests, ordered by bucket then group; and the totals. Cost is
 * summed in integer nano-USD and converted once.
 */
export async function spendReport(query: SpendQuery): Promise<SpendReport> {
  const { dimension, granularity, range, nowSeconds } = query;
  const step = GRANULARITY_SECONDS[granularity];
  const max = query.maxCounters ?? MAX_REPORT_COUNTERS;
  const budget = { left: max, max };
  const rows = new Map<string, { period: number; group: string | null; amounts: SpendAmounts }>();
  const totals = zeroAmounts();
  const add = (hour: string, value: string | null, item: CounterItem) => {
    const hourStart = parseHourLabel(hour);
    if (hourStart === undefined || hourStart < range.from || hourStart >= range.to) return;
    const amounts = zeroAmounts();
    for (const attribute of COUNTER_ATTRIBUTES) amounts[attribute] = Number(item[attribute] ?? 0);
    const period = floorTo(hourStart, step);
    const id = `${period}\u0000${value === null ? '' : `=${value}`}`;
    const row = rows.get(id) ?? rows.set(id, { period, group: value, amounts: zeroAmounts() }).get(id)!;
    addAmounts(row.amounts, amounts);
    addAmounts(totals, amounts);
  };
  const base = isBaseDimension(dimension);
  // Every shard of each partition: a counter is the sum of its shards (shard 0 holds what was
  // written before sharding, and the counters written before cells are never sharded).
  const shards = Array.from({ length: config().counterShards }, (_, shard) => shard);
  const reads = query.workspaceIds.flatMap((ws) => [
    // Workspace, key, provider and model are fields of the (key, provider, model) cells.
    ...(base ? shards.map((shard) => ({ ws, cell: true, shard })) : []),
    // Metadata counters; for the base dimensions, the counters written before cells (a
    // workspace's were its keys'), which hold the hours before cells and nothing after.
    ...(base ? [0] : shards).map((shard) => ({ ws, cell: false, shard })),
  ]);
  const legacy: Dimension = dimension === 'workspace' ? 'api_key' : dimension;
  await inLanes(reads, MAX_PARALLEL_QUERIES, async ({ ws, cell, shard }) => {
    if (cell) {
      for (const item of await readCounters(ws, 'cell', shard, range, nowSeconds, budget)) {
        const parsed = parseCellSortKey(item.sk);
        if (parsed) add(parsed.hour, dimension === 'workspace' || !isBaseDimension(dimension) ? ws : parsed.cell[dimension], item);
      }
      return;
    }
    for (const item of await readCounters(ws, legacy, shard, range, nowSeconds, budget)) {
      const { hour, value } = parseCounterSortKey(item.sk);
      add(hour, dimension === 'workspace' ? ws : value, item);
    }
  });
  const data = [...rows.values()]
    .sort((a, b) => a.period - b.period || compareGroups(a.group, b.group))
    .map((row) => ({ period_start: isoSeconds(row.period), group: row.group, ...withCost(row.amounts) }));
  return { data, totals: withCost(totals) };
}
