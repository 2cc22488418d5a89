import { INDEXED_METADATA_KEYS } from '../shared/tables';
import { hourLabel, HOUR_LABEL_LENGTH } from './periods';

/**
 * Which counters a request adds to, and how counters are keyed, pure. Table `usage`:
 *   pk `WS#<workspace>#SPEND#<dimension>`  (dimension: api_key, provider, model, metadata.<key>;
 *      `workspace` is read as the sum of the workspace's api_key counters)
 *   sk `<YYYY-MM-DDTHH>#<value>`, or just `<YYYY-MM-DDTHH>` when the value is null (no provider
 *      or model: a request refused before routing)
 * so a report is one Query per (workspace, dimension) over a sort-key range of hours.
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

export const spendPartition = (workspaceId: string, dimension: Dimension) => `WS#${workspaceId}#SPEND#${dimension}`;
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
export interface SpendAmounts {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** Integer nano-USD, so sums are exact. */
  cost_nano_usd: number;
  unpriced_requests: number;
}

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

/** Every counter one request adds to: its hour, in each dimension it has a value for. */
export function countersOf(record: SpendFacts): CounterKey[] {
  const hour = hourLabel(record.created_at);
  const ws = record.workspace_id;
  const key = (dimension: Dimension, value: string | null): CounterKey => ({ pk: spendPartition(ws, dimension), sk: counterSortKey(hour, groupValue(value)) });
  // No `workspace` counter: every request has a key, so a workspace's totals are the sum of
  // its keys' counters (functions/spend/report.ts), one UpdateItem per request fewer.
  return [
    key('api_key', record.api_key_id),
    key('provider', record.provider),
    key('model', record.model),
    ...countedMetadata(record.metadata).map(([k, v]) => key(`${METADATA_DIMENSION_PREFIX}${k}`, v)),
  ];
}
