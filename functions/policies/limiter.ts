import { createHash } from 'node:crypto';
import { config } from '../shared/config';
import { addOnce, getItem } from '../shared/db/ops';
import { sharedReads } from '../shared/db/shared-reads';
import { GatewayError } from '../shared/errors';
import { loadOnce } from '../shared/load-once';
import { TtlCache } from '../shared/stores/ttl-cache';
import { log, type LogContext } from '../shared/telemetry/logger';
import { METADATA_PREFIX, UNIT_MS, UNIT_WORDS, WILDCARD, type PolicyType, type PolicyUnit, type RateLimitPolicy } from './model';
import { addInFlight, counterIdOf, knownFarFromSlice, learnCount } from './known-counters';
import { admitRequest, hasUnitInHand, refillAhead, returnUnit, type BucketWindow } from './reservations';
import { listRateLimitPolicies } from './read';
import { FullShards, shardCountFor, shardPk, sliceOf, startShard } from './shards';

/**
 * The rate limiter: fixed windows, counters only in DynamoDB (the `usage` table), so a
 * limit holds exactly across any number of Lambda containers.
 *
 * - Policies: a workspace's ACTIVE policies are cached per container for
 *   `config().policyCacheTtlMs` (at most 10 s): a created, changed or archived policy takes
 *   effect everywhere within that time (at once in the container that wrote it).
 * - Matching: a policy applies when every condition matches; a condition matches when the
 *   request has a value for its key equal to the condition's value, or any value for `*`.
 *   A request without a value for a condition's key does not match.
 * - Buckets: one counter per policy, `group_by` tuple and window. A request without a
 *   value for a `group_by` key counts under the value '' (all such requests share one
 *   bucket), so leaving a key out never escapes the limit.
 * - Windows: start = floor(now / unit) * unit (minute, hour, UTC day); counter items expire
 *   (TTL) a minute after their window ends.
 * - `requests` and `tool_calls`: conditional atomic increments per bucket, reserved in blocks by
 *   `./reservations` (one round trip serves every request waiting in the container, and a
 *   busy container reserves a little ahead of demand). Concurrent reservations are
 *   serialised by DynamoDB, so never more than `value` are admitted per window, and
 *   exactly `value` while demand lasts. When several request policies apply and one
 *   refuses, the units the others handed out go back to this container's reservation: a
 *   refused request does not consume another bucket's budget.
 * - `tokens`: admission reads the window's consumed tokens and refuses once they reach the
 *   limit; the caller adds the actual usage afterwards with `recordTokenUsage`. Overshoot
 *   bound: requests admitted while the window was under the limit each add their full
 *   usage, so a window can exceed its limit by at most (requests in flight at the moment
 *   the limit is crossed) x (their tokens each). Nothing more is admitted after that.
 *   Read-ahead (`TOKENS_READ_AHEAD_MS`, ./known-counters.ts): what the container learned of
 *   the counter within that time (its read, or the total its own usage write returned),
 *   plus its own usage not yet answered, stands in for the read while under half the slice.
 * - Sharding (./shards.ts): a large limit is split into slices over several counters, so
 *   no item takes every request's write. A request counts on one shard, trying the others
 *   when its shard's slice is spent; a container remembers the shards it saw full for the
 *   window. Requests: still never more than the limit (the slices add up to it), and a
 *   refusal only once every slice is spent. Tokens: each shard can overshoot its slice by
 *   the requests in flight on it when it crossed (docs/usage.md states the bound).
 */

export interface LimitSubject {
  workspaceId: string;
  organisationId: string;
  /** The gateway key's id (`key_...`), never its secret. */
  apiKeyId: string;
  provider?: string;
  model?: string;
  metadata: Record<string, string>;
  /**
   * Set on an MCP tool call: only `tool_calls` policies count it (and only tool calls count
   * for them); `mcp_server` and `mcp_tool` conditions match its server slug and tool name.
   */
  toolCall?: { server: string; tool: string };
  /** The request, for the trace id of a refusal's log line. */
  context?: LogContext;
}

/** Where a tokens policy counts: opaque to callers, handed back to `recordTokenUsage`. */
export interface TokenBucket {
  readonly policyId: string;
  readonly pk: string;
  readonly type: PolicyType;
  readonly unit: PolicyUnit;
}

export interface RateLimitGrant {
  /**
   * `x-ratelimit-limit|remaining|reset` of the tightest requests policy and
   * `x-ratelimit-limit|remaining|reset-tokens` of the tightest tokens policy (as OpenAI names
   * them); empty when none applies.
   */
  readonly headers: Record<string, string>;
  readonly tokenBuckets: readonly TokenBucket[];
  /** The request's units of requests policies, for `releaseRateLimitUnits`. */
  readonly units?: readonly BucketWindow[];
}

/**
 * Give a granted request's requests-policy units back (another check refused it, e.g. a
 * budget checked at the same time): the next request of this container uses them.
 */
export function releaseRateLimitUnits(grant: RateLimitGrant): void {
  for (const window of grant.units ?? []) returnUnit(window);
}

/**
 * Refill, in the background, what a granted request's requests policies hold ahead (see
 * ./reservations): call it once the request's upstream has answered, or it ended without
 * reaching one, so the reservation is not made while the request waits for its provider.
 */
export function refillRateLimitUnits(grant: RateLimitGrant): void {
  for (const window of grant.units ?? []) refillAhead(window);
}

const TTL_SLACK_SECONDS = 60;

// ---- policies (cached) -----------------------------------------------------------------

interface ActivePolicy {
  id: string;
  name: string | null;
  type: PolicyType;
  unit: PolicyUnit;
  value: number;
  /** What sizes the shards: the largest value the policy has had (model.ts, shard_value). */
  shardValue: number;
  conditions: ReadonlyArray<{ key: string; value: string }>;
  groupBy: readonly string[];
}

const toActive = (p: RateLimitPolicy): ActivePolicy => ({
  id: p.id,
  name: p.name,
  type: p.type,
  unit: p.unit,
  value: p.value,
  shardValue: Math.max(p.value, Number(p.shard_value ?? 0)),
  conditions: p.conditions,
  groupBy: p.group_by.map((g) => g.key),
});

const policyCache = /* @__PURE__ */ new TtlCache<ActivePolicy[]>(() => config().policyCacheTtlMs);

async function activePolicies(workspaceId: string): Promise<ActivePolicy[]> {
  const policies = await policyCache.get(workspaceId, async () =>
    (await listRateLimitPolicies(workspaceId)).filter((p) => p.status === 'active').map(toActive),
  );
  return policies ?? [];
}

/** Drop cached policies: of one workspace (after a write in this container) or all (tests). */
export function clearPolicyCache(workspaceId?: string): void {
  if (workspaceId === undefined) policyCache.clear();
  else policyCache.delete(workspaceId);
}

// ---- matching and buckets ----------------------------------------------------------------

function subjectValue(subject: LimitSubject, key: string): string | undefined {
  switch (key) {
    case 'api_key':
      return subject.apiKeyId;
    case 'workspace_id':
      return subject.workspaceId;
    case 'organisation_id':
      return subject.organisationId;
    case 'provider':
      return subject.provider;
    case 'model':
      return subject.model;
    case 'mcp_server':
      return subject.toolCall?.server;
    case 'mcp_tool':
      return subject.toolCall?.tool;
    default:
      if (!key.startsWith(METADATA_PREFIX)) return undefined;
      return Object.hasOwn(subject.metadata, key.slice(METADATA_PREFIX.length)) ? subject.metadata[key.slice(METADATA_PREFIX.length)] : undefined;
  }
}

/** Every condition matches (budgets share the rule). */
export function applies(policy: { conditions: ReadonlyArray<{ key: string; value: string }> }, subject: LimitSubject): boolean {
  return policy.conditions.every((c) => {
    const actual = subjectValue(subject, c.key);
    return actual !== undefined && (c.value === WILDCARD || c.value === actual);
  });
}

/** A `tool_calls` policy counts tool calls only; `requests` and `tokens` policies count model requests only. */
const countsFor = (policy: ActivePolicy, subject: LimitSubject): boolean => (policy.type === 'tool_calls') === (subject.toolCall !== undefined);

/** Counted one by one with reservations (not read and added afterwards, like tokens). */
const countsUnits = (type: PolicyType): boolean => type !== 'tokens';

/** A bounded name for the request's `group_by` tuple: a hash of its values, or `all`. */
export function groupOf(subject: LimitSubject, groupBy: readonly string[]): string {
  const values = groupBy.map((key) => subjectValue(subject, key) ?? '');
  return values.length ? createHash('sha256').update(JSON.stringify(values)).digest('base64url') : 'all';
}

/** The bucket's partition key: policy plus its group. */
const bucketPk = (subject: LimitSubject, policy: ActivePolicy) => `WS#${subject.workspaceId}#RL#${policy.id}#${groupOf(subject, policy.groupBy)}`;

interface Window extends BucketWindow {
  /** Seconds until the window ends, at least 1. */
  resetSeconds: number;
}

function windowOf(pk: string, type: PolicyType, unit: PolicyUnit, now: number): Window {
  const length = UNIT_MS[unit];
  const start = Math.floor(now / length) * length;
  const end = start + length;
  return {
    pk,
    sk: `${type}#${unit}#${start}`,
    endsAt: end,
    resetSeconds: Math.max(1, Math.ceil((end - now) / 1000)),
    ttl: Math.ceil(end / 1000) + TTL_SLACK_SECONDS,
  };
}

// ---- enforcement --------------------------------------------------------------------------

interface Checked {
  policy: ActivePolicy;
  pk: string;
  window: Window;
  /** Count after this request (requests) or consumed so far (tokens). */
  count: number;
  admitted: boolean;
}

/**
 * How many whole units a window holds: requests (and tool calls) are counted one by one, so
 * a fractional value admits its whole part (count + 1 <= value); tokens compare as they are.
 */
const capacityOf = (policy: ActivePolicy): number => (countsUnits(policy.type) ? Math.floor(policy.value) : policy.value);

/** A count on one shard, as the whole window's estimate: the shard's share scaled up (exact with one shard). */
const scaled = (count: number, slice: number, capacity: number): number =>
  slice === capacity ? count : Math.min(capacity, Math.round((count * capacity) / slice));

/** The shard each sharded bucket's latest request was admitted on in this container (the longest unchanged forgotten first). */
const admittedShard = new Map<string, number>();
const REMEMBER_SHARDS = 10_000;

function rememberShard(pk: string, shard: number): void {
  if (admittedShard.get(pk) === shard) return;
  admittedShard.delete(pk);
  admittedShard.set(pk, shard);
  if (admittedShard.size > REMEMBER_SHARDS) admittedShard.delete(admittedShard.keys().next().value!);
}

/**
 * The shard this container's previous request of the bucket was admitted on, when it still
 * holds a unit there (else `from`): a request served alone starts at a random shard, and the
 * units reserved ahead are on the shard of the requests before it.
 */
function shardWithUnitInHand(pk: string, sk: string, from: number): number {
  const shard = admittedShard.get(pk);
  return shard !== undefined && hasUnitInHand(shardPk(pk, shard), sk) ? shard : from;
}

/**
 * Count one request on the policy's window: on its starting shard, else on the next with
 * room. A shard whose slice is spent answers from this container's memory (./reservations).
 */
async function countRequest(policy: ActivePolicy, pk: string, now: number): Promise<Checked> {
  const capacity = capacityOf(policy);
  const settings = config();
  const shards = shardCountFor(Math.max(capacity, Math.floor(policy.shardValue)), settings.rateLimitShardMin, settings.counterShards);
  const first = startShard(shards);
  const start = shards > 1 ? shardWithUnitInHand(pk, windowOf(pk, policy.type, policy.unit, now).sk, first) : first;
  for (let i = 0; i < shards; i++) {
    const shard = (start + i) % shards;
    const window = windowOf(shardPk(pk, shard), policy.type, policy.unit, now);
    const slice = sliceOf(capacity, shards, shard, true);
    const { admitted, count } = await admitRequest(window, slice, pk);
    if (admitted) {
      if (shards > 1) rememberShard(pk, shard);
      return { policy, pk, window, count: scaled(count, slice, capacity), admitted };
    }
  }
  return { policy, pk, window: windowOf(pk, policy.type, policy.unit, now), count: capacity, admitted: false };
}

const fullTokenShards = /* @__PURE__ */ new FullShards();
/** A window's consumed tokens on one shard, read once for the requests of this process that ask at the same time. */
const readConsumed = /* @__PURE__ */ sharedReads<number>();

/**
 * Read the tokens the window has consumed on the request's starting shard; a shard at its
 * slice is remembered and the next one read. Refused once every shard is at its slice.
 * Read-ahead first: a shard whose consumed tokens this container learned within
 * `TOKENS_READ_AHEAD_MS`, its own unanswered usage on top, far from its slice, admits with
 * no read (the bound is in docs/usage.md, "Rate limits").
 */
async function readTokens(policy: ActivePolicy, pk: string, now: number): Promise<Checked> {
  const settings = config();
  const shards = shardCountFor(policy.shardValue, settings.tokensShardMin, settings.counterShards);
  const logical = windowOf(pk, policy.type, policy.unit, now);
  const windowOn = (shard: number) => (shard === 0 ? logical : windowOf(shardPk(pk, shard), policy.type, policy.unit, now));
  // The limit is part of the window's name: a raised limit reads its shards again.
  const id = `${pk}\u0000${logical.sk}\u0000${policy.value}`;
  const full = fullTokenShards.of(id);
  const start = startShard(shards);
  if (settings.tokensReadAheadMs > 0) {
    for (let i = 0; i < shards; i++) {
      const shard = (start + i) % shards;
      const window = windowOn(shard);
      const slice = sliceOf(policy.value, shards, shard, false);
      const known = knownFarFromSlice(counterIdOf(window), slice, now, settings.tokensReadAheadMs);
      if (known !== undefined) return { policy, pk: window.pk, window, count: scaled(known, slice, policy.value), admitted: true };
    }
  }
  for (let i = 0; i < shards; i++) {
    const shard = (start + i) % shards;
    if (full.has(shard)) continue;
    const window = windowOn(shard);
    const counterId = counterIdOf(window);
    const count = await readConsumed(counterId, async () => {
      const sentAt = Date.now();
      const consumed = Number((await getItem<{ count?: number }>('usage', { pk: window.pk, sk: window.sk }, true))?.count ?? 0);
      learnCount(counterId, consumed, sentAt);
      return consumed;
    });
    const slice = sliceOf(policy.value, shards, shard, false);
    if (count < slice) return { policy, pk: window.pk, window, count: scaled(count, slice, policy.value), admitted: true };
    fullTokenShards.markFull(id, logical.endsAt, shard, count);
  }
  const consumed = [...fullTokenShards.of(id).values()].reduce((a, b) => a + b, 0);
  return { policy, pk, window: logical, count: Math.max(consumed, policy.value), admitted: false };
}

/** A requests policy's headers are unsuffixed (as they always were); a tokens policy's end in `-tokens`, a tool-calls policy's in `-tool-calls`. */
function headersOf(type: PolicyType, limit: number, remaining: number, resetSeconds: number): Record<string, string> {
  const suffix = type === 'tokens' ? '-tokens' : type === 'tool_calls' ? '-tool-calls' : '';
  return {
    [`x-ratelimit-limit${suffix}`]: String(limit),
    [`x-ratelimit-remaining${suffix}`]: String(Math.max(0, remaining)),
    [`x-ratelimit-reset${suffix}`]: String(resetSeconds),
  };
}

/** The policy with the least left in its window, among `checked`. */
const tightestOf = (checked: readonly Checked[]): Checked | undefined =>
  checked.reduce<Checked | undefined>((a, b) => (a === undefined || capacityOf(b.policy) - b.count < capacityOf(a.policy) - a.count ? b : a), undefined);

const headersOfChecked = (c: Checked | undefined): Record<string, string> =>
  c ? headersOf(c.policy.type, capacityOf(c.policy), capacityOf(c.policy) - c.count, c.window.resetSeconds) : {};

function exceeded(c: Checked): GatewayError {
  const { policy } = c;
  const label = policy.name ? `'${policy.name}' (${policy.id})` : policy.id;
  const what = policy.type === 'tool_calls' ? 'tool calls' : policy.type;
  return new GatewayError(
    429,
    'rate_limit_error',
    `Rate limit exceeded: policy ${label} allows ${policy.value} ${what} per ${UNIT_WORDS[policy.unit]}. Retry after ${c.window.resetSeconds} s.`,
    null,
    'rate_limit_exceeded',
    { 'retry-after': String(c.window.resetSeconds), ...headersOf(policy.type, capacityOf(policy), 0, c.window.resetSeconds) },
  );
}

const settledValue = <T>(r: PromiseSettledResult<T>): T | undefined => (r.status === 'fulfilled' ? r.value : undefined);

/**
 * Admit or refuse one request under the workspace's active policies. Throws a 429
 * `rate_limit_error` (code `rate_limit_exceeded`, `retry-after` and `x-ratelimit-*`
 * headers) naming the refusing policy; when several refuse, the one whose window ends
 * last. Storage errors propagate after undoing any increment already made.
 */
export async function enforceRateLimits(subject: LimitSubject, now = Date.now()): Promise<RateLimitGrant> {
  const matching = (await activePolicies(subject.workspaceId)).filter((p) => countsFor(p, subject) && applies(p, subject));
  if (matching.length === 0) return { headers: {}, tokenBuckets: [] };

  const results = await Promise.allSettled(
    matching.map((policy) => {
      const pk = bucketPk(subject, policy);
      return countsUnits(policy.type) ? countRequest(policy, pk, now) : readTokens(policy, pk, now);
    }),
  );
  const checked = results.map(settledValue).filter((c): c is Checked => c !== undefined);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  const refused = checked.filter((c) => !c.admitted);

  if (failed || refused.length) {
    for (const c of checked) if (c.admitted && countsUnits(c.policy.type)) returnUnit(c.window);
    if (failed) throw failed.reason;
    const binding = refused.reduce((a, b) => (b.window.resetSeconds > a.window.resetSeconds ? b : a));
    log.debug('rate limit exceeded', { policy_id: binding.policy.id, type: binding.policy.type, unit: binding.policy.unit }, subject.context);
    throw exceeded(binding);
  }

  const requests = checked.filter((c) => c.policy.type === 'requests');
  const tokens = checked.filter((c) => c.policy.type === 'tokens');
  const toolCalls = checked.filter((c) => c.policy.type === 'tool_calls');
  const units = checked.filter((c) => countsUnits(c.policy.type)).map((c) => c.window);
  return {
    headers: { ...headersOfChecked(tightestOf(requests)), ...headersOfChecked(tightestOf(tokens)), ...headersOfChecked(tightestOf(toolCalls)) },
    tokenBuckets: tokens.map((c) => ({ policyId: c.policy.id, pk: c.pk, type: c.policy.type, unit: c.policy.unit })),
    ...(units.length ? { units } : {}),
  };
}

/**
 * Tokens policies' usage, summed per window in a busy process and written once per HOLD_MS
 * (../shared/db/held-counters.ts); loaded with the first usage to record, after a response,
 * so it is not part of every cold start.
 */
const tokensWriter = /* @__PURE__ */ loadOnce(async () =>
  (await import('../shared/db/held-counters')).heldCounterWriter<{ count: number }>('tokens usage', async (item) => {
    const counterId = counterIdOf(item.key);
    const sentAt = Date.now();
    try {
      const updated = await addOnce<{ count: number }>('usage', item.key, { set: { ttl: item.ttl }, add: { count: item.amounts.count } });
      // The new total is the freshest this container knows: its next admission may need no read.
      if (updated) learnCount(counterId, Number(updated.count), sentAt);
    } finally {
      // Answered or failed, these tokens are no longer this container's own in flight.
      addInFlight(counterId, -item.amounts.count);
    }
  }),
);

/**
 * Add a request's actual token usage to every tokens bucket of its grant, in the window
 * current at `now` (when the usage became known). A no-op for a grant without token
 * buckets or a usage of zero or less. A request alone in its process waits for the write; in
 * a busy process the usage is held with the others' and written within a second (one write
 * per bucket per second, whatever the rate), which widens the overshoot bound by the tokens
 * the process used in that second (docs/usage.md, "Counters at scale").
 */
export async function recordTokenUsage(grant: RateLimitGrant, totalTokens: number, now = Date.now()): Promise<void> {
  const tokens = Math.round(totalTokens);
  if (!Number.isFinite(tokens) || tokens <= 0 || grant.tokenBuckets.length === 0) return;
  const addTokens = await tokensWriter();
  await Promise.all(
    grant.tokenBuckets.map((bucket) => {
      const window = windowOf(bucket.pk, bucket.type, bucket.unit, now);
      // Counted on top of what this container knew of the window until its write is answered
      // (held with others' in a busy process, up to a second).
      addInFlight(counterIdOf({ pk: bucket.pk, sk: window.sk }), tokens);
      return addTokens([{ pk: bucket.pk, sk: window.sk }], { count: tokens }, window.ttl);
    }),
  );
}
