import { badRequest } from '../shared/errors';

/**
 * Time arithmetic of spend counters, pure. Counters are kept per UTC hour; a day is the sum
 * of its 24 hours, summed when a report is read (see docs/usage.md "Spend reports": a request
 * writes each counter once, a report reads at most 24 times more items, and requests
 * outnumber reports by far).
 */

export const HOUR_SECONDS = 3600;
export const DAY_SECONDS = 86_400;

export const GRANULARITIES = ['hour', 'day'] as const;
export type Granularity = (typeof GRANULARITIES)[number];

export const GRANULARITY_SECONDS: Record<Granularity, number> = { hour: HOUR_SECONDS, day: DAY_SECONDS };

/** The longest range a report covers, per granularity (bounds the items one report reads). */
export const MAX_RANGE_DAYS: Record<Granularity, number> = { hour: 31, day: 366 };

/** Length of an hour label `YYYY-MM-DDTHH`, the first part of every counter's sort key. */
export const HOUR_LABEL_LENGTH = 13;

export const floorTo = (seconds: number, step: number) => Math.floor(seconds / step) * step;
export const ceilTo = (seconds: number, step: number) => Math.ceil(seconds / step) * step;

/** `2026-11-25T19` for any instant of that UTC hour: sorts like time, as text. */
export function hourLabel(unixSeconds: number): string {
  return new Date(floorTo(unixSeconds, HOUR_SECONDS) * 1000).toISOString().slice(0, HOUR_LABEL_LENGTH);
}

/** The start (Unix seconds) of the hour a label names; undefined for anything else. */
export function parseHourLabel(label: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}$/.test(label)) return undefined;
  const ms = Date.parse(`${label}:00:00Z`);
  return Number.isNaN(ms) ? undefined : ms / 1000;
}

export const isoSeconds = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString().replace('.000Z', 'Z');

/** The start of the current UTC month. */
export function monthStart(unixSeconds: number): number {
  const d = new Date(unixSeconds * 1000);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 1000;
}

const ISO_DATE_TIME = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * A time query parameter: Unix seconds (digits only) or ISO 8601 (`2026-11-01`,
 * `2026-11-01T10:00:00Z`, an offset; without one it is UTC). Throws a 400 naming `name`.
 */
export function parseInstant(value: string, name: string): number {
  const invalid = () =>
    badRequest(
      `Invalid \`${name}\`: expected ISO 8601 (e.g. 2026-11-01 or 2026-11-01T10:00:00Z) or Unix seconds, got '${value.slice(0, 64)}'.`,
      name,
      'invalid_value',
    );
  if (/^\d{1,12}$/.test(value)) return Number(value);
  const m = ISO_DATE_TIME.exec(value);
  if (!m) throw invalid();
  const [, date, time, zone] = m;
  let zoneSuffix = 'Z';
  if (zone && zone.toUpperCase() !== 'Z') zoneSuffix = zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const ms = Date.parse(`${date}T${time ?? '00:00'}${time && time.length === 5 ? ':00' : ''}${zoneSuffix}`);
  // Date.parse rolls 2026-02-30 over to March: compare the date back.
  if (Number.isNaN(ms) || (!time && new Date(ms).toISOString().slice(0, 10) !== date)) throw invalid();
  return Math.floor(ms / 1000);
}

export interface ReportRange {
  /** Start of the first bucket, inclusive (Unix seconds). */
  from: number;
  /** End of the last bucket, exclusive (Unix seconds). */
  to: number;
}

/**
 * The buckets a report covers: `from` rounded down and `to` rounded up to whole buckets of
 * the granularity (counters hold whole hours, so a report cannot cut inside one). Defaults:
 * the current UTC month so far. `to` must be after `from`; the range is bounded per
 * granularity (MAX_RANGE_DAYS).
 */
export function reportRange(query: { from?: string; to?: string }, granularity: Granularity, nowSeconds: number): ReportRange {
  const rawFrom = query.from ? parseInstant(query.from, 'from') : monthStart(nowSeconds);
  const rawTo = query.to ? parseInstant(query.to, 'to') : nowSeconds;
  if (rawTo <= rawFrom) {
    throw badRequest(`\`to\` (${isoSeconds(rawTo)}) must be after \`from\` (${isoSeconds(rawFrom)}).`, 'to', 'invalid_value');
  }
  const step = GRANULARITY_SECONDS[granularity];
  const from = floorTo(rawFrom, step);
  // An instant on a boundary ends the bucket before it; any later instant belongs to its bucket.
  const to = Math.max(ceilTo(rawTo, step), from + step);
  const maxDays = MAX_RANGE_DAYS[granularity];
  if (to - from > maxDays * DAY_SECONDS) {
    throw badRequest(
      `The range from \`from\` to \`to\` spans more than ${maxDays} days, the most a report at granularity=${granularity} covers${granularity === 'hour' ? ' (use granularity=day)' : ''}.`,
      'from',
      'range_too_long',
    );
  }
  return { from, to };
}
