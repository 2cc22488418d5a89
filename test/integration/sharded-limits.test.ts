import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { startChildGateway } from '../support/child-gateway';
import { call, recordsOfUser, startTestGateway } from '../support/gateway';

/**
 * Sharded limits (functions/policies/shards.ts) from three gateway processes sharing
 * DynamoDB, like three Lambda containers. The shard minimums are lowered so that small
 * limits are sharded here: 4 shards of every limit below.
 */

const SHARDING = {
  COUNTER_SHARDS: '4',
  RATE_LIMIT_SHARD_MIN: '5',
  TOKENS_SHARD_MIN: '10',
  BUDGET_SHARD_MIN_USD: '0.001',
  // Every process caches a workspace's policies: a new one must apply in all three before a test sends.
  POLICY_CACHE_TTL_MS: '300',
};
/** Until every process has read a policy just written (the cache above, with a margin). */
const policiesApplied = () => new Promise((r) => setTimeout(r, 1_000));
const SHARDS = 4;

let gw: LocalGateway;
let fake: FakeServer;
const children: Array<{ url: string; stop: () => Promise<void> }> = [];
let urls: string[] = [];
let ops: typeof import('../../functions/shared/db/ops');
let groupOf: typeof import('../../functions/policies/limiter').groupOf;
let shardPk: typeof import('../../functions/policies/shards').shardPk;

beforeAll(async () => {
  // Read by this process's configuration on first use (the gateway below is its first user).
  Object.assign(process.env, SHARDING);
  fake = await startOpenAIFake();
  gw = await startTestGateway();
  // One after the other: two gateway starts at once are slow on a loaded machine.
  children.push(await startChildGateway(gw, SHARDING));
  children.push(await startChildGateway(gw, SHARDING));
  urls = [gw.url, ...children.map((c) => c.url)];
  ops = await import('../../functions/shared/db/ops');
  ({ groupOf } = await import('../../functions/policies/limiter'));
  ({ shardPk } = await import('../../functions/policies/shards'));
  const provider = await call(gw, 'POST', '/v1/providers', { body: { slug: 'oa', provider: 'openai', api_key: 'sk-x', custom_host: `${fake.url}/v1` } });
  expect(provider.status, provider.text).toBe(200);
}, 300_000);
afterAll(async () => {
  await Promise.all(children.map((c) => c.stop()));
  await gw?.stop();
  await fake?.close();
  for (const name of Object.keys(SHARDING)) delete process.env[name];
});

let seq = 0;
const unique = (name: string) => `${name}-${Date.now()}-${seq++}`;

async function chat(base: string, opts: { user: string; model?: string; key?: string }) {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': opts.key ?? gw.adminKey,
      'x-gateway-provider': '@oa',
      'x-gateway-metadata': JSON.stringify({ _user: opts.user }),
    },
    body: JSON.stringify({ model: opts.model ?? 'gpt-4o-mini', messages: [{ role: 'user', content: 'one two three' }] }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

/** The count attribute of every shard of a counter. */
async function shardValues(pk: string, sk: string, attribute: string): Promise<number[]> {
  const items = await Promise.all(
    Array.from({ length: SHARDS }, (_, shard) => ops.getItem<Record<string, number>>('usage', { pk: shardPk(pk, shard), sk }, true)),
  );
  return items.map((item) => Number(item?.[attribute] ?? 0));
}

/** All log records of one `_user`, once `count` of them are written. */
const recordsOf = (user: string, count: number) => recordsOfUser(gw, user, count);

describe('a requests policy split over 4 shards', () => {
  it('admits exactly its limit of 90 concurrent requests from three processes, spread over the shards, each within its slice', {
    timeout: 120_000,
  }, async () => {
    const policy = await call(gw, 'POST', '/v1/policies/rate-limits', {
      body: { name: unique('sharded rpm'), conditions: [], group_by: [{ key: 'metadata._user' }], type: 'requests', unit: 'rpm', value: 30 },
    });
    expect(policy.status, policy.text).toBe(200);
    await policiesApplied();
    try {
      const user = unique('rpm');
      const minute = Math.floor(Date.now() / 60_000) * 60_000;
      const results = await Promise.all(Array.from({ length: 90 }, (_, i) => chat(urls[i % 3]!, { user })));
      if (Math.floor(Date.now() / 60_000) * 60_000 !== minute) return; // the window turned mid-test: nothing to compare
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(30);
      expect(statuses.filter((s) => s === 429)).toHaveLength(60);
      for (const r of results.filter((x) => x.status === 429)) expect(r.body.error.code).toBe('rate_limit_exceeded');
      // Each process starts on a shard of its own; 30 admitted across 4 slices of 8, 8, 7, 7
      // means requests went on to shards that were not their own.
      const group = groupOf({ workspaceId: gw.workspaceId, organisationId: gw.organisationId, apiKeyId: '', metadata: { _user: user } }, ['metadata._user']);
      const counts = await shardValues(`WS#${gw.workspaceId}#RL#${policy.body.id}#${group}`, `requests#rpm#${minute}`, 'count');
      expect(counts).toEqual([8, 8, 7, 7]);
    } finally {
      await call(gw, 'DELETE', `/v1/policies/rate-limits/${policy.body.id}`);
    }
  });
});

describe('a budget split over 4 shards', () => {
  it('refuses only once the shards together reach the limit, overshoots within the stated bound, and the spend report is the records’ sum', {
    timeout: 180_000,
  }, async () => {
    const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: unique('budget key'), scopes: ['gateway'] } });
    const model = unique('sharded-model');
    const price = 0.001;
    expect((await call(gw, 'POST', '/v1/prices', { body: { provider: 'openai', model, per_request: price } })).status).toBe(200);
    const limit = 0.02;
    const budget = await call(gw, 'POST', '/v1/policies/budgets', {
      body: { type: 'budget', name: unique('sharded budget'), limit_usd: limit, period: 'month', conditions: [{ key: 'api_key', value: key.body.id }] },
    });
    expect(budget.status, budget.text).toBe(200);
    await policiesApplied();
    try {
      const user = unique('budget');
      const perProcess = 3;
      const inFlight = 3 * perProcess;
      let sent = 0;
      let refused = 0;
      for (let wave = 0; wave < 30; wave++) {
        const results = await Promise.all(Array.from({ length: inFlight }, (_, i) => chat(urls[i % 3]!, { user, model, key: key.body.secret })));
        sent += results.length;
        for (const r of results) {
          if (r.status === 429) {
            expect(r.body.error.code).toBe('budget_exceeded');
            refused++;
          } else expect(r.status).toBe(200);
        }
        await recordsOf(user, sent);
        if (results.every((r) => r.status === 429)) break;
      }
      expect(refused).toBeGreaterThan(0);
      const records = await recordsOf(user, sent);
      expect(records).toHaveLength(sent);
      const spent = records.reduce((a, r) => a + Math.round((r.cost_usd ?? 0) * 1e9), 0) / 1e9;
      // No under-admission: a request is refused only once every shard has spent its slice.
      expect(spent).toBeGreaterThanOrEqual(limit);
      // The stated bound: each shard can pass its slice by the requests in flight on it when
      // it crossed, so at most shards x in-flight x the largest cost.
      expect(spent).toBeLessThanOrEqual(limit + SHARDS * inFlight * price + 1e-9);
      // Every shard took part, and the shards add up to what the records cost.
      const month = new Date();
      const periodStart = Date.UTC(month.getUTCFullYear(), month.getUTCMonth(), 1);
      // A charge is sent with its record, not before it is readable: wait (bounded) for the last ones.
      const budgetPk = `WS#${gw.workspaceId}#BUD#${budget.body.id}#all`;
      let shards: number[] = [];
      for (let i = 0; i < 50; i++) {
        shards = await shardValues(budgetPk, `budget#month#${periodStart}`, 'spent_nusd');
        if (shards.reduce((a, b) => a + b, 0) >= Math.round(spent * 1e9)) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(shards.every((nusd) => nusd >= (limit / SHARDS) * 1e9)).toBe(true);
      expect(shards.reduce((a, b) => a + b, 0) / 1e9).toBeCloseTo(spent, 9);

      const report = await call(gw, 'GET', '/v1/analytics/spend?group_by=api_key');
      const rows = report.body.data.filter((r: { group: string }) => r.group === key.body.id);
      expect(rows.reduce((a: number, r: { requests: number }) => a + r.requests, 0)).toBe(records.length);
      expect(rows.reduce((a: number, r: { cost_usd: number }) => a + r.cost_usd, 0)).toBeCloseTo(spent, 9);
    } finally {
      await call(gw, 'DELETE', `/v1/policies/budgets/${budget.body.id}`);
    }
  });
});

describe('a tokens policy split over 4 shards', () => {
  it('refuses only once the shards together reach the limit, and overshoots within the stated bound', { timeout: 120_000 }, async () => {
    const model = unique('tokens-model');
    const value = 60;
    const policy = await call(gw, 'POST', '/v1/policies/rate-limits', {
      body: { name: unique('sharded tpd'), conditions: [{ key: 'model', value: model }], group_by: [], type: 'tokens', unit: 'rpd', value },
    });
    expect(policy.status, policy.text).toBe(200);
    await policiesApplied();
    try {
      const user = unique('tokens');
      const inFlight = 6;
      let sent = 0;
      let refused = 0;
      for (let wave = 0; wave < 40; wave++) {
        const results = await Promise.all(Array.from({ length: inFlight }, (_, i) => chat(urls[i % 3]!, { user, model })));
        sent += results.length;
        for (const r of results) {
          if (r.status === 429) refused++;
          else expect(r.status).toBe(200);
        }
        await recordsOf(user, sent);
        if (results.every((r) => r.status === 429)) break;
      }
      expect(refused).toBeGreaterThan(0);
      const records = await recordsOf(user, sent);
      const tokens = records.map((r) => r.usage?.total_tokens ?? 0);
      const used = tokens.reduce((a, b) => a + b, 0);
      expect(used).toBeGreaterThanOrEqual(value);
      expect(used).toBeLessThanOrEqual(value + SHARDS * inFlight * Math.max(...tokens));
    } finally {
      await call(gw, 'DELETE', `/v1/policies/rate-limits/${policy.body.id}`);
    }
  });
});
