import { config } from '../shared/config';
import { getItem } from '../shared/db/ops';
import { sharedReads } from '../shared/db/shared-reads';
import { GatewayError, NO_RETRY_HEADERS } from '../shared/errors';
import { log } from '../shared/telemetry/logger';
import type { ActiveBudget, BudgetBucket, BudgetGrant, BudgetPeriod } from './budget-model';
import { counterIdOf, knownFarFromSlice, learnCount } from './known-counters';
import { groupOf, type LimitSubject } from './limiter';
import { FullShards, shardCountFor, shardPk, sliceOf, startShard } from './shards';

/** Checking the budgets that apply to a request (see ./budgets.ts): periods, counters, refusals. */

const NANO = 1e9;
const DAY_MS = 86_400_000;
/** Counters outlive their period by this much (a report of last month's spend is the spend API's job). */
const TTL_SLACK_SECONDS = 86_400;

// ---- periods -----------------------------------------------------------------------------

export interface Period {
  /** Sort-key part naming the period. */
  key: string;
  /** Epoch ms the period ends; undefined for `total`. */
  endsAt?: number;
}

export function periodOf(period: BudgetPeriod, now: number): Period {
  const dayStart = Math.floor(now / DAY_MS) * DAY_MS;
  switch (period) {
    case 'day':
      return { key: `day#${dayStart}`, endsAt: dayStart + DAY_MS };
    case 'week': {
      const sinceMonday = (new Date(dayStart).getUTCDay() + 6) % 7;
      const start = dayStart - sinceMonday * DAY_MS;
      return { key: `week#${start}`, endsAt: start + 7 * DAY_MS };
    }
    case 'month': {
      const d = new Date(now);
      const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
      return { key: `month#${start}`, endsAt: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
    }
    case 'total':
      return { key: 'total' };
  }
}

// ---- enforcement -------------------------------------------------------------------------

interface Checked {
  bucket: BudgetBucket;
  /** What is spent: exact with one shard; with several, the admitting shard's spend scaled up (or, refused, the shards' sum). */
  spentNusd: number;
  period: Period;
  admitted: boolean;
}

const usdText = (nusd: number) => String(nusd / NANO);

function budgetHeaders(c: Checked, now: number): Record<string, string> {
  const headers: Record<string, string> = {
    'x-budget-limit-usd': String(c.bucket.budget.limitUsd),
    'x-budget-spent-usd': usdText(c.spentNusd),
    'x-budget-remaining-usd': usdText(Math.max(0, c.bucket.budget.limitNusd - c.spentNusd)),
  };
  if (c.period.endsAt !== undefined) headers['x-budget-reset'] = String(Math.max(1, Math.ceil((c.period.endsAt - now) / 1000)));
  return headers;
}

function exceeded(c: Checked, now: number): GatewayError {
  const { budget } = c.bucket;
  const label = budget.name ? `'${budget.name}' (${budget.id})` : budget.id;
  const per = budget.period === 'total' ? 'in total' : `per ${budget.period}`;
  const headers = budgetHeaders(c, now);
  const reset = headers['x-budget-reset'];
  return new GatewayError(
    429,
    'rate_limit_error',
    `Budget exceeded: budget ${label} allows $${budget.limitUsd} ${per} and $${usdText(c.spentNusd)} is spent.${reset ? ` It resets in ${reset} s.` : ''}`,
    null,
    'budget_exceeded',
    // Retrying will not help before the period ends: tell the OpenAI SDKs not to.
    { ...headers, ...NO_RETRY_HEADERS, ...(reset ? { 'retry-after': reset } : {}) },
  );
}

const fullShards = /* @__PURE__ */ new FullShards();
/** A period's spend on one shard, read once for the requests of this process that ask at the same time. */
const readSpend = /* @__PURE__ */ sharedReads<number>();

/** A shard's spend, read strongly consistent; what it says is learned for the read-ahead. */
async function readCounter(counterId: string, key: { pk: string; sk: string }): Promise<number> {
  const sentAt = Date.now();
  const spent = Number((await getItem<{ spent_nusd?: number }>('usage', key, true))?.spent_nusd ?? 0);
  learnCount(counterId, spent, sentAt);
  return spent;
}

/**
 * One budget's period: its counter read on the request's starting shard (strongly
 * consistent), and on the next shards while the ones read are at their slice of the limit.
 * A container remembers shards seen at their slice for the period (spend only grows), and
 * admits without a read on a shard whose spend it learned recently and is far from its slice.
 */
async function checkBudget(budget: ActiveBudget, subject: LimitSubject, now: number): Promise<Checked> {
  const period = periodOf(budget.period, now);
  const pk = `WS#${subject.workspaceId}#BUD#${budget.id}#${groupOf(subject, budget.groupBy)}`;
  const sk = `budget#${period.key}`;
  const ttl = period.endsAt === undefined ? undefined : Math.ceil(period.endsAt / 1000) + TTL_SLACK_SECONDS;
  const settings = config();
  // By the largest limit the budget had: lowering it must not hide the shards this period's spend is in.
  const shards = shardCountFor(budget.shardLimitUsd, settings.budgetShardMinUsd, settings.counterShards);
  // The limit is part of the period's name: a raised limit reads its shards again.
  const id = `${pk}\u0000${sk}\u0000${budget.limitNusd}`;
  const full = fullShards.of(id);
  const start = startShard(shards);
  const admit = (shard: number, spent: number, slice: number): Checked => {
    const bucket: BudgetBucket = { budget, pk: shardPk(pk, shard), sk, ttl, ...(shards > 1 ? { sharded: { shards, sliceNusd: slice, basePk: pk } } : {}) };
    const estimate = shards > 1 ? Math.min(budget.limitNusd - 1, Math.round((spent * budget.limitNusd) / slice)) : spent;
    return { bucket, spentNusd: estimate, period, admitted: true };
  };
  // Read-ahead first: a shard whose spend this container learned recently, far from its
  // slice, admits with no read (a container serving one request at a time starts at a
  // random shard, so the one its last charge answered for is often another).
  if (settings.budgetReadAheadMs > 0) {
    for (let i = 0; i < shards; i++) {
      const shard = (start + i) % shards;
      const slice = sliceOf(budget.limitNusd, shards, shard, true);
      const spent = knownFarFromSlice(counterIdOf({ pk: shardPk(pk, shard), sk }), slice, now, settings.budgetReadAheadMs);
      if (spent !== undefined) return admit(shard, spent, slice);
    }
  }
  for (let i = 0; i < shards; i++) {
    const shard = (start + i) % shards;
    if (full.has(shard)) continue;
    const key = { pk: shardPk(pk, shard), sk };
    const slice = sliceOf(budget.limitNusd, shards, shard, true);
    const counterId = counterIdOf(key);
    const spent = await readSpend(counterId, () => readCounter(counterId, key));
    if (spent < slice) return admit(shard, spent, slice);
    fullShards.markFull(id, period.endsAt ?? Number.POSITIVE_INFINITY, shard, spent);
  }
  const spent = [...fullShards.of(id).values()].reduce((a, b) => a + b, 0);
  return { bucket: { budget, pk, sk, ttl }, spentNusd: spent, period, admitted: false };
}

/**
 * Read the matching budgets' counters for the current period: the grant, or the 429 of
 * the budget whose period ends last when several are spent.
 */
export async function checkBudgets(matching: readonly ActiveBudget[], subject: LimitSubject, now: number): Promise<BudgetGrant> {
  const checked = await Promise.all(matching.map((budget) => checkBudget(budget, subject, now)));
  const spent = checked.filter((c) => !c.admitted);
  if (spent.length) {
    const binding = spent.reduce((a, b) => ((b.period.endsAt ?? Infinity) > (a.period.endsAt ?? Infinity) ? b : a));
    log.debug('budget exceeded', { budget_id: binding.bucket.budget.id, period: binding.bucket.budget.period }, subject.context);
    throw exceeded(binding, now);
  }
  const tightest = checked.reduce((a, b) => (b.bucket.budget.limitNusd - b.spentNusd < a.bucket.budget.limitNusd - a.spentNusd ? b : a));
  return { buckets: checked.map((c) => c.bucket), headers: budgetHeaders(tightest, now) };
}
