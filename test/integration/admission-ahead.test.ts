import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, startTestGateway } from '../support/gateway';
import { startSlowDynamoDb } from '../support/slow-dynamodb';

/**
 * Admission with no storage round trip before the provider, for callers sending one
 * request at a time. Rate limits: a bucket whose requests come less than 2 s apart keeps a
 * unit in hand, reserved in the background. Budget and tokens read-ahead (BUDGET_READ_AHEAD_MS,
 * TOKENS_READ_AHEAD_MS): a container that learned a budget counter's spend (a tokens policy's
 * consumed tokens) recently (its own read, or the new total its own charge returned) admits without a
 * storage read before the provider while that spend is under half the limit; from half on,
 * every request reads, so the refusal at the limit stays exact. What another container's
 * charges can do meanwhile is the stated edge of the bound (docs/usage.md, "Budgets"),
 * shown here too. Every DynamoDB call of this gateway goes through a listing proxy.
 */

let proxy: Awaited<ReturnType<typeof startSlowDynamoDb>>;
let gw: LocalGateway;
let fake: FakeServer;
let ops: typeof import('../../functions/shared/db/ops');

/** Far longer than the test, so no admission depends on how fast this machine is. */
const READ_AHEAD_MS = 600_000;

beforeAll(async () => {
  proxy = await startSlowDynamoDb(inject('dynamodbEndpoint'), 400);
  fake = await startOpenAIFake();
  gw = await startTestGateway({
    dynamodbEndpoint: proxy.url,
    env: { BUDGET_READ_AHEAD_MS: String(READ_AHEAD_MS), TOKENS_READ_AHEAD_MS: String(READ_AHEAD_MS) },
  });
  ops = await import('../../functions/shared/db/ops');
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
  await proxy?.close();
});

let seq = 0;
const unique = (name: string) => `${name}-${Date.now()}-${seq++}`;

/** A key under a daily budget ($10 unless said), and a model whose every request costs exactly $1. */
async function budgetAtOneDollarARequest(limitUsd = 10) {
  const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: unique('read-ahead key'), scopes: ['gateway'] } });
  const model = unique('read-ahead-model');
  expect((await call(gw, 'POST', '/v1/prices', { body: { provider: 'openai', model, per_request: 1 } })).status).toBe(200);
  const budget = await call(gw, 'POST', '/v1/policies/budgets', {
    body: { type: 'budget', name: unique('ten dollars'), limit_usd: limitUsd, period: 'day', conditions: [{ key: 'api_key', value: key.body.id }] },
  });
  expect(budget.status, budget.text).toBe(200);
  const dayStart = Math.floor(Date.now() / 86_400_000) * 86_400_000;
  const counter = { pk: `WS#${gw.workspaceId}#BUD#${budget.body.id}#all`, sk: `budget#day#${dayStart}` };
  const onCounter = (operation: string) => proxy.state.calls.filter((c) => c.operation === operation && c.body.includes(`#BUD#${budget.body.id}#`));
  return {
    secret: key.body.secret as string,
    model,
    counter,
    reads: () => onCounter('GetItem').length,
    /** The partition keys its charges went to. */
    chargedKeys: () => onCounter('UpdateItem').map((c) => (JSON.parse(c.body) as { Key: { pk: { S: string } } }).Key.pk.S),
    /** Waits (bounded) until `n` increments of the counter have been answered. */
    async charged(n: number) {
      for (let i = 0; i < 250 && onCounter('UpdateItem').filter((c) => c.answered).length < n; i++) await new Promise((r) => setTimeout(r, 20));
      expect(onCounter('UpdateItem').filter((c) => c.answered)).toHaveLength(n);
      // The answer is on its way to the gateway: let it arrive before the next request.
      await new Promise((r) => setTimeout(r, 20));
    },
  };
}

async function chat(secret: string, model: string) {
  const started = performance.now();
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'x-gateway-api-key': secret,
      'x-gateway-provider': 'openai',
      authorization: 'Bearer sk-test',
      'x-gateway-custom-host': `${fake.url}/v1`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'read ahead' }] }),
  });
  const body = (await res.json()) as any;
  return { status: res.status, body, spent: res.headers.get('x-budget-spent-usd'), headers: res.headers, ms: performance.now() - started };
}

describe('budget read-ahead', () => {
  it('far from the limit a request needs no read before the provider; from half the limit on each one reads, and the refusal is exact', async () => {
    const b = await budgetAtOneDollarARequest();
    const readsPerRequest: number[] = [];
    for (let i = 1; i <= 10; i++) {
      const before = b.reads();
      const res = await chat(b.secret, b.model);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      readsPerRequest.push(b.reads() - before);
      await b.charged(i);
    }
    // The first knows nothing and reads; the next four are admitted on the $1-$4 their
    // predecessors' charges returned (under half of $10); from $5 on, each reads.
    expect(readsPerRequest).toEqual([1, 0, 0, 0, 0, 1, 1, 1, 1, 1]);
    const before = b.reads();
    const refused = await chat(b.secret, b.model);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('budget_exceeded');
    expect(b.reads() - before).toBe(1);
    const stored = await ops.getItem<{ spent_nusd: number }>('usage', b.counter, true);
    expect(Number(stored?.spent_nusd)).toBe(10e9);
  });

  it('another container’s charges: a fresh spend learned under half the limit still admits (the bound’s stated edge), and the next charge’s total ends it', async () => {
    const b = await budgetAtOneDollarARequest();
    expect((await chat(b.secret, b.model)).status).toBe(200);
    await b.charged(1);
    // Other containers spend the other $9 (their increments, straight to the counter).
    await ops.updateItem('usage', b.counter, { add: { spent_nusd: 9e9 } });
    await b.charged(2);
    // This container still knows $1, learned within BUDGET_READ_AHEAD_MS and under half the
    // limit: admitted without a read (the edge the bound states: more than half the limit
    // was charged within the read-ahead).
    const reads = b.reads();
    const stale = await chat(b.secret, b.model);
    expect(stale.status).toBe(200);
    expect(stale.spent).toBe('1');
    expect(b.reads()).toBe(reads);
    await b.charged(3);
    // Its charge returned the whole $11: the next request reads, and is refused.
    const refused = await chat(b.secret, b.model);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('budget_exceeded');
    expect(b.reads()).toBe(reads + 1);
    expect(Number((await ops.getItem<{ spent_nusd: number }>('usage', b.counter, true))?.spent_nusd)).toBe(11e9);
  });

  it('while its own charge is unanswered the container counts it on top of what it knew (which misses it), with no read', async () => {
    const b = await budgetAtOneDollarARequest();
    expect((await chat(b.secret, b.model)).status).toBe(200);
    await b.charged(1);
    proxy.state.slow = true;
    try {
      expect((await chat(b.secret, b.model)).status).toBe(200);
      // The second charge has reached DynamoDB; its answer is held back.
      for (let i = 0; i < 250 && !proxy.state.received.some((c) => c.operation === 'UpdateItem' && c.body.includes(b.counter.pk)); i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      const reads = b.reads();
      const third = await chat(b.secret, b.model);
      expect(third.status).toBe(200);
      expect(b.reads()).toBe(reads);
      // $1 learned from the first charge's answer, $1 in flight.
      expect(third.spent).toBe('2');
    } finally {
      proxy.state.slow = false;
    }
    await b.charged(3);
  });

  it('a sharded budget: the container stays on the shard whose spend it learned, with no reads while that is under half its slice', async () => {
    // $40 over 4 shards (BUDGET_SHARD_MIN_USD is $10): each shard's slice is $10.
    const b = await budgetAtOneDollarARequest(40);
    const readsPerRequest: number[] = [];
    for (let i = 1; i <= 5; i++) {
      const before = b.reads();
      expect((await chat(b.secret, b.model)).status).toBe(200);
      readsPerRequest.push(b.reads() - before);
      await b.charged(i);
    }
    expect(readsPerRequest).toEqual([1, 0, 0, 0, 0]);
    const keys = b.chargedKeys();
    expect(keys).toHaveLength(5);
    expect(new Set(keys).size).toBe(1);
  });
});

describe('rate-limit units in hand', () => {
  it('one request at a time under a sharded requests policy: from the third on, each is admitted on a unit reserved in the background, not before the provider', {
    timeout: 60_000,
  }, async () => {
    const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: unique('in-hand key'), scopes: ['gateway'] } });
    // A million a minute: split over 32 shards, and far from refusing.
    const policy = await call(gw, 'POST', '/v1/policies/rate-limits', {
      body: { name: unique('in hand'), conditions: [{ key: 'api_key', value: key.body.id }], type: 'requests', unit: 'rpm', value: 1_000_000 },
    });
    expect(policy.status, policy.text).toBe(200);
    const slowMs = 400;
    // The five requests must share one minute's window (a new window starts with no unit in hand).
    const msLeftInMinute = 60_000 - (Date.now() % 60_000);
    if (msLeftInMinute < 12_000) await new Promise((r) => setTimeout(r, msLeftInMinute + 50));
    const answeredWithin: boolean[] = [];
    proxy.state.slow = true;
    try {
      for (let i = 0; i < 5; i++) {
        // Alone in the process (the previous invocation's writes have ended), as on Lambda on
        // demand, where each request starts at a random shard; and less than 2 s apart.
        if (i > 0) await new Promise((r) => setTimeout(r, 900));
        const res = await chat(key.body.secret, 'gpt-4o-mini');
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        answeredWithin.push(res.ms < slowMs);
      }
    } finally {
      proxy.state.slow = false;
    }
    // With DynamoDB's writes 400 ms late: the first reserves its own unit, the second its own and
    // two ahead (both wait); from then on each finds a unit in hand, whichever shard it is on.
    expect(answeredWithin).toEqual([false, false, true, true, true]);
  });

  it('the units ahead are refilled once the upstream has answered, never while the request waits for its first byte', { timeout: 60_000 }, async () => {
    const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: unique('refill key'), scopes: ['gateway'] } });
    const policy = await call(gw, 'POST', '/v1/policies/rate-limits', {
      body: { name: unique('refill'), conditions: [{ key: 'api_key', value: key.body.id }], type: 'requests', unit: 'rpm', value: 900 },
    });
    expect(policy.status, policy.text).toBe(200);
    const msLeftInMinute = 60_000 - (Date.now() % 60_000);
    if (msLeftInMinute < 15_000) await new Promise((r) => setTimeout(r, msLeftInMinute + 50));
    const reservations = () => proxy.state.calls.filter((c) => c.operation === 'UpdateItem' && c.body.includes(`#RL#${policy.body.id}#`)).length;
    // The provider holds each answer 300 ms: long enough to see any reservation made meanwhile.
    fake.setBehaviour({ latencyMs: 300 });
    const duringTheWait: number[] = [];
    try {
      for (let i = 0; i < 6; i++) {
        const before = reservations();
        const answer = chat(key.body.secret, 'gpt-4o-mini');
        await new Promise((r) => setTimeout(r, 200));
        duringTheWait.push(reservations() - before);
        expect((await answer).status).toBe(200);
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      fake.setBehaviour({});
    }
    // The first two wait for their own reservation (the second also reserves two ahead);
    // every later refill went out after an answer.
    expect(duringTheWait).toEqual([1, 1, 0, 0, 0, 0]);
    // ... and there were refills: six requests on eight units.
    expect(reservations()).toBe(4);
  });
});

describe('tokens read-ahead', () => {
  it('far from the limit a request needs no read before the provider; from half the limit on each one reads, and the refusal is exact', async () => {
    // The tokens one request of this body uses at the fake.
    const probeKey = await call(gw, 'POST', '/v1/api-keys', { body: { name: unique('tokens probe'), scopes: ['gateway'] } });
    const probe = await chat(probeKey.body.secret, 'gpt-4o-mini');
    const perRequest = Number(probe.body.usage?.total_tokens);
    expect(perRequest).toBeGreaterThan(0);
    const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: unique('tokens key'), scopes: ['gateway'] } });
    const limit = perRequest * 10;
    // A daily window, so the requests share it.
    const policy = await call(gw, 'POST', '/v1/policies/rate-limits', {
      body: { name: unique('tokens'), conditions: [{ key: 'api_key', value: key.body.id }], type: 'tokens', unit: 'rpd', value: limit },
    });
    expect(policy.status, policy.text).toBe(200);
    const onCounter = (operation: string) => proxy.state.calls.filter((c) => c.operation === operation && c.body.includes(`#RL#${policy.body.id}#`));
    const reads = () => onCounter('GetItem').length;
    const written = async (n: number) => {
      for (let i = 0; i < 250 && onCounter('UpdateItem').filter((c) => c.answered).length < n; i++) await new Promise((r) => setTimeout(r, 20));
      expect(onCounter('UpdateItem').filter((c) => c.answered)).toHaveLength(n);
      await new Promise((r) => setTimeout(r, 20));
    };
    const readsPerRequest: number[] = [];
    const remaining: number[] = [];
    for (let i = 1; i <= 10; i++) {
      const before = reads();
      const res = await chat(key.body.secret, 'gpt-4o-mini');
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      readsPerRequest.push(reads() - before);
      remaining.push(Number(res.headers.get('x-ratelimit-remaining-tokens')) / perRequest);
      await written(i);
    }
    // The first knows nothing and reads; the next four are admitted on the 1-4 requests' tokens
    // their predecessors' writes returned (under half the limit); from half on, each reads.
    expect(readsPerRequest).toEqual([1, 0, 0, 0, 0, 1, 1, 1, 1, 1]);
    expect(remaining).toEqual([10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
    const before = reads();
    const refused = await chat(key.body.secret, 'gpt-4o-mini');
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limit_exceeded');
    expect(reads() - before).toBe(1);
  });

  it('while its own usage is unanswered the container counts it on top of what it knew, with no read', async () => {
    const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: unique('tokens in flight'), scopes: ['gateway'] } });
    // One counter (under 2 x TOKENS_SHARD_MIN), so the header is the count itself, not a shard's scaled up.
    const policy = await call(gw, 'POST', '/v1/policies/rate-limits', {
      body: { name: unique('tokens in flight'), conditions: [{ key: 'api_key', value: key.body.id }], type: 'tokens', unit: 'rpd', value: 100_000 },
    });
    expect(policy.status, policy.text).toBe(200);
    const onCounter = (operation: string) => proxy.state.calls.filter((c) => c.operation === operation && c.body.includes(`#RL#${policy.body.id}#`));
    const first = await chat(key.body.secret, 'gpt-4o-mini');
    expect(first.status).toBe(200);
    const perRequest = Number(first.body.usage.total_tokens);
    for (let i = 0; i < 250 && onCounter('UpdateItem').filter((c) => c.answered).length < 1; i++) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 20));
    proxy.state.slow = true;
    try {
      expect((await chat(key.body.secret, 'gpt-4o-mini')).status).toBe(200);
      // The second request's usage has reached DynamoDB; its answer is held back.
      for (let i = 0; i < 250 && onCounter('UpdateItem').filter((c) => !c.answered).length < 1; i++) await new Promise((r) => setTimeout(r, 20));
      const reads = onCounter('GetItem').length;
      const third = await chat(key.body.secret, 'gpt-4o-mini');
      expect(third.status).toBe(200);
      expect(onCounter('GetItem').length).toBe(reads);
      // One request's tokens learned from the first write's answer, one in flight.
      expect(100_000 - Number(third.headers.get('x-ratelimit-remaining-tokens'))).toBe(2 * perRequest);
    } finally {
      proxy.state.slow = false;
    }
  });
});
