import { INDEXED_METADATA_KEYS } from '../shared/tables';
import { hourLabel, HOUR_LABEL_LENGTH } from './periods';

/**
 * Which counters a request adds to, and how counters are keyed, pure. Table `usage`:
 *   pk `WS#<workspace>#SPEND#cell`: one counter per hour and (key, provider, model), sk
 *      `<YYYY-MM-DDTHH>#["<key>","<provider>","<model>"]` (JSON; null when the request had
 *      none: refused before routing). A report by workspace, key, provider or model sums the
 *      cells of its hours by that field, so a request writes one counter for all four.
 *   pk `WS#<workspace>#SPEND#metadata.<key>`: one per counted metadata key, sk
 *      `<YYYY-MM-DDTHH>#<value>`.
 *   pk `WS#<workspace>#SPEND#api_key|provider|model`: what requests wrote before cells
 *      (one counter per dimension), still summed by reports, never written.
 * so a report is one or two Queries per workspace and shard over a sort-key range of hours.
 * Each counter is spread over `COUNTER_SHARDS` partitions (`spendShardPk`): a write goes to
 * one of them at random, a report sums them all.
 */

export const BASE_DIMENSIONS = ['workspace', 'api_key', 'provider', 'model'] as const;
export type BaseDimension = (typeof BASE_DIMENSIONS)[number];
/** `workspace`, `api_key`, `provider`, `model` or `metadata.<key>`. */
export type Dimension = BaseDimension | `metadata.${string}`;

export const METADATA_DIMENSION_PREFIX = 'metadata.';

/** At most this many metadata keys of one request get counters (well-known keys first, then in the record's order). */
export const MAX_SPEND_METADATA_KEYS = 8;
/** Longer metadata keys get no counter. */
export const MAX_SPEND_METADATA_KEY_CHARS = 64;
/** Longer values (UTF-8 bytes) get no counter (a sort key holds at most 1024 bytes). */
export const MAX_SPEND_VALUE_BYTES = 512;

/** A dimension's counters, or `cell`: the (key, provider, model) counters. */
export type SpendPartition = Dimension | 'cell';
export const spendPartition = (workspaceId: string, partition: SpendPartition) => `WS#${workspaceId}#SPEND#${partition}`;

/**
 * Shard `shard` of a spend partition (`WS#<ws>#SPEND#<shard>#<partition>`; a partition name
 * never starts with a digit). Shard 0 is the partition itself: the counters written before
 * sharding are read as its shard 0.
 */
export const spendShardPk = (pk: string, shard: number): string => (shard === 0 ? pk : pk.replace('#SPEND#', `#SPEND#${shard}#`));

/** What a cell counts: one key's requests to one provider and model. */
export interface Cell {
  api_key: string;
  provider: string | null;
  model: string | null;
}

/** A sort key holds at most 1024 bytes. */
const MAX_SORT_KEY_BYTES = 1024;

export function cellSortKey(hour: string, cell: Cell): string {
  let model = cell.model;
  for (;;) {
    const sk = `${hour}#${JSON.stringify([cell.api_key, cell.provider, model])}`;
    if (Buffer.byteLength(sk, 'utf8') <= MAX_SORT_KEY_BYTES || !model) return sk;
    model = model.slice(0, Math.floor(model.length * 0.9));
  }
}

/** The hour and the cell of a cell counter's sort key (undefined if it is not one). */
export function parseCellSortKey(sk: string): { hour: string; cell: Cell } | undefined {
  try {
    const [api_key, provider, model] = JSON.parse(sk.slice(HOUR_LABEL_LENGTH + 1)) as [string, string | null, string | null];
    return typeof api_key === 'string' ? { hour: sk.slice(0, HOUR_LABEL_LENGTH), cell: { api_key, provider, model } } : undefined;
  } catch {
    return undefined;
  }
}
export const counterSortKey = (hour: string, value: string | null) => (value === null ? hour : `${hour}#${value}`);

/** The hour label and the value (null: none) of a counter's sort key. */
export function parseCounterSortKey(sk: string): { hour: string; value: string | null } {
  const hour = sk.slice(0, HOUR_LABEL_LENGTH);
  return { hour, value: sk.length > HOUR_LABEL_LENGTH ? sk.slice(HOUR_LABEL_LENGTH + 1) : null };
}

/** Sort-key bounds (BETWEEN, inclusive) of every counter of the hours [first, last]. */
export function hourRangeBounds(firstHour: string, lastHour: string): { lo: string; hi: string } {
  // '$' sorts right after '#': above every `<lastHour>#<value>`, below the next hour.
  return { lo: firstHour, hi: `${lastHour}$` };
}

const fitsValue = (value: string) => value.length <= MAX_SPEND_VALUE_BYTES && Buffer.byteLength(value, 'utf8') <= MAX_SPEND_VALUE_BYTES;

/** Metadata keys that get counters: non-empty values within the bounds, well-known keys first. */
export function countedMetadata(metadata: Record<string, string> | undefined): Array<[key: string, value: string]> {
  if (!metadata) return [];
  const wellKnown = INDEXED_METADATA_KEYS as readonly string[];
  const keys = [...wellKnown.filter((k) => k in metadata), ...Object.keys(metadata).filter((k) => !wellKnown.includes(k))];
  const counted: Array<[string, string]> = [];
  for (const key of keys) {
    const value = metadata[key];
    if (typeof value !== 'string' || value === '' || key === '' || key.length > MAX_SPEND_METADATA_KEY_CHARS || !fitsValue(value)) continue;
    counted.push([key, value]);
    if (counted.length === MAX_SPEND_METADATA_KEYS) break;
  }
  return counted;
}

/** What one request adds to each of its counters. */
export type SpendAmounts = {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** Integer nano-USD, so sums are exact. */
  cost_nano_usd: number;
  unpriced_requests: number;
};

export const COUNTER_ATTRIBUTES = [
  'requests',
  'prompt_tokens',
  'completion_tokens',
  'total_tokens',
  'cost_nano_usd',
  'unpriced_requests',
] as const satisfies ReadonlyArray<keyof SpendAmounts>;

export const zeroAmounts = (): SpendAmounts => ({
  requests: 0,
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
  cost_nano_usd: 0,
  unpriced_requests: 0,
});

export function addAmounts(into: SpendAmounts, more: SpendAmounts): SpendAmounts {
  for (const attribute of COUNTER_ATTRIBUTES) into[attribute] += more[attribute];
  return into;
}

/** The facts of a request-log record a spend counter reads. */
export interface SpendFacts {
  workspace_id: string;
  api_key_id: string;
  provider: string | null;
  model: string | null;
  metadata: Record<string, string>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  /** USD, whole nano-dollars; null when the price is unknown (or not computed). */
  cost_usd?: number | null;
  pricing_unknown?: boolean;
  created_at: number;
}

const count = (n: unknown) => (typeof n === 'number' && Number.isFinite(n) && n > 0 ? Math.round(n) : 0);

export function amountsOf(record: SpendFacts): SpendAmounts {
  return {
    requests: 1,
    prompt_tokens: count(record.usage?.prompt_tokens),
    completion_tokens: count(record.usage?.completion_tokens),
    total_tokens: count(record.usage?.total_tokens),
    // cost_usd is already whole nano-dollars: rounding only undoes the float's representation error.
    cost_nano_usd: typeof record.cost_usd === 'number' && Number.isFinite(record.cost_usd) ? Math.round(record.cost_usd * 1e9) : 0,
    unpriced_requests: record.pricing_unknown === true ? 1 : 0,
  };
}

/** A value that names a group: null stays null; an oversized one is cut (model ids are never that long in practice). */
function groupValue(value: string | null): string | null {
  if (value === null || fitsValue(value)) return value;
  let cut = value.slice(0, MAX_SPEND_VALUE_BYTES / 4);
  while (Buffer.byteLength(cut, 'utf8') > MAX_SPEND_VALUE_BYTES) cut = cut.slice(0, -1);
  return cut;
}

export interface CounterKey {
  pk: string;
  sk: string;
}

/** Every counter one request adds to: its hour's cell (key, provider, model), and each counted metadata key's. */
export function countersOf(record: SpendFacts): CounterKey[] {
  const hour = hourLabel(record.created_at);
  const ws = record.workspace_id;
  return [
    {
      pk: spendPartition(ws, 'cell'),
      sk: cellSortKey(hour, { api_key: record.api_key_id, provider: groupValue(record.provider), model: groupValue(record.model) }),
    },
    ...countedMetadata(record.metadata).map(([k, v]) => ({
      pk: spendPartition(ws, `${METADATA_DIMENSION_PREFIX}${k}`),
      sk: counterSortKey(hour, groupValue(v)),
    })),
  ];
}
