import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { startChildGateway } from '../support/child-gateway';
import { call, errorOf, recordsOfUser, startTestGateway } from '../support/gateway';

/**
 * Budgets through HTTP: CRUD with the policies' rules, refusal before the provider is
 * called, periods, threshold events, and the exactness bound across two gateway processes
 * sharing DynamoDB. Costs are made exact with a per-request price override.
 */

let gw: LocalGateway;
let openai: FakeServer;

beforeAll(async () => {
  openai = await startOpenAIFake();
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.stop();
  await openai?.close();
});

let seq = 0;
const unique = (name: string) => `${name}-${Date.now()}-${seq++}`;

/** A gateway key of its own, so a budget can name it in a condition. */
async function gatewayKey(): Promise<{ id: string; secret: string }> {
  const res = await call(gw, 'POST', '/v1/api-keys', { body: { name: unique('budget key'), scopes: ['gateway'] } });
  expect(res.status).toBe(200);
  return { id: res.body.id, secret: res.body.secret };
}

/** A model whose every request costs exactly `usd` in this workspace. */
async function pricedModel(usd: number): Promise<string> {
  const model = unique('budget-model');
  const res = await call(gw, 'POST', '/v1/prices', { body: { provider: 'openai', model, per_request: usd } });
  expect(res.status).toBe(200);
  return model;
}

async function createBudget(body: Record<string, unknown>) {
  const res = await call(gw, 'POST', '/v1/policies/budgets', { body: { type: 'budget', ...body } });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

const headersFor = (user: string) => ({
  'x-gateway-provider': 'openai',
  authorization: 'Bearer sk-test',
  'x-gateway-custom-host': `${openai.url}/v1`,
  'x-gateway-metadata': JSON.stringify({ _user: user }),
});

async function chatAt(base: string, key: string, model: string, user: string) {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...headersFor(user), 'x-gateway-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'spend a little' }] }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

/** All log records of one `_user`, once `count` of them are written. */
const recordsOf = (user: string, count: number) => recordsOfUser(gw, user, count);

describe('budgets API', () => {
  it('creates, reads, lists, updates, archives and deletes, with the policies’ validation', async () => {
    const created = await createBudget({
      name: 'monthly',
      limit_usd: 50,
      period: 'month',
      alert_thresholds: [0.8, 0.5],
      conditions: [{ key: 'metadata._user', value: 'alice' }],
    });
    expect(created).toMatchObject({ object: 'policy_budget', type: 'budget', limit_usd: 50, period: 'month', alert_thresholds: [0.5, 0.8], status: 'active' });
    expect((await call(gw, 'GET', `/v1/policies/budgets/${created.id}`)).body).toEqual(created);
    expect((await call(gw, 'GET', '/v1/policies/budgets')).body.data.map((b: { id: string }) => b.id)).toContain(created.id);
    // Rate-limit and budget lists do not mix.
    expect((await call(gw, 'GET', '/v1/policies/rate-limits')).body.data.map((b: { id: string }) => b.id)).not.toContain(created.id);

    const updated = await call(gw, 'PUT', `/v1/policies/budgets/${created.id}`, { body: { limit_usd: 75 } });
    expect(updated.body).toMatchObject({ limit_usd: 75, period: 'month' });
    expect((await call(gw, 'POST', `/v1/policies/budgets/${created.id}/archive`)).body.status).toBe('archived');
    expect((await call(gw, 'GET', `/v1/policies/budgets/${created.id}`)).status).toBe(404);
    expect((await call(gw, 'GET', `/v1/policies/budgets/${created.id}?status=archived`)).status).toBe(200);
    expect((await call(gw, 'DELETE', `/v1/policies/budgets/${created.id}`)).body).toEqual({ object: 'policy_budget.deleted', id: created.id, deleted: true });
  });

  it.each([
    [{ limit_usd: 0, period: 'day' }, 'limit_usd'],
    [{ limit_usd: 1, period: 'year' }, 'period'],
    [{ limit_usd: 1, period: 'day', alert_thresholds: [1.5] }, 'alert_thresholds[0]'],
    [{ limit_usd: 1, period: 'day', alert_thresholds: [0.5, 0.5] }, 'alert_thresholds'],
    [{ limit_usd: 1, period: 'day', conditions: [{ key: 'colour', value: 'x' }] }, 'conditions[0].key'],
    [{ period: 'day' }, 'limit_usd'],
  ])('refuses %j naming %s', async (body, field) => {
    const res = await call(gw, 'POST', '/v1/policies/budgets', { body: { type: 'budget', ...body } });
    expect(res.status).toBe(400);
    expect(errorOf(res).param).toBe(field);
  });

  it('belongs to its workspace', async () => {
    const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: unique('Budgets other') } });
    const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'other', workspace_id: ws.body.id, scopes: ['admin'] } });
    const mine = await createBudget({ limit_usd: 1, period: 'day' });
    expect((await call(gw, 'GET', `/v1/policies/budgets/${mine.id}`, { key: key.body.secret })).status).toBe(404);
    expect((await call(gw, 'DELETE', `/v1/policies/budgets/${mine.id}`, { key: key.body.secret })).status).toBe(404);
    await call(gw, 'DELETE', `/v1/policies/budgets/${mine.id}`);
  });
});

describe('enforcement', () => {
  it('refuses with budget_exceeded once spent, before the provider is called, and tells the SDKs not to retry', async () => {
    const key = await gatewayKey();
    const model = await pricedModel(0.001);
    const budget = await createBudget({ name: 'tiny', limit_usd: 0.003, period: 'day', conditions: [{ key: 'api_key', value: key.id }] });
    const user = unique('refusal');
    for (let i = 0; i < 3; i++) {
      const ok = await chatAt(gw.url, key.secret, model, user);
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-gateway-cost')).toBe('0.001');
      expect(ok.headers.get('x-budget-limit-usd')).toBe('0.003');
      await recordsOf(user, i + 1); // charged when its record is priced
    }
    const before = openai.count();
    const refused = await chatAt(gw.url, key.secret, model, user);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ type: 'rate_limit_error', code: 'budget_exceeded' });
    expect(refused.body.error.message).toContain(budget.id);
    expect(refused.headers.get('x-should-retry')).toBe('false');
    expect(refused.headers.get('x-budget-spent-usd')).toBe('0.003');
    expect(refused.headers.get('x-budget-remaining-usd')).toBe('0');
    expect(Number(refused.headers.get('x-budget-reset'))).toBeGreaterThan(0);
    expect(Number(refused.headers.get('x-budget-reset'))).toBeLessThanOrEqual(86_400);
    expect(openai.count()).toBe(before);

    // Another key is not under this budget.
    const other = await gatewayKey();
    expect((await chatAt(gw.url, other.secret, model, unique('other'))).status).toBe(200);
    await call(gw, 'DELETE', `/v1/policies/budgets/${budget.id}`);
  });

  it('checked with the rate limits at the same time: a request the budget refuses uses no rate-limit unit', async () => {
    const key = await gatewayKey();
    const model = await pricedModel(0.001);
    const policy = await call(gw, 'POST', '/v1/policies/rate-limits', {
      body: { type: 'requests', unit: 'rpm', value: 2, conditions: [{ key: 'api_key', value: key.id }] },
    });
    expect(policy.status, policy.text).toBe(200);
    // A budget spent from the start: limits below the smallest price refuse every request.
    const budget = await createBudget({ limit_usd: 0.000001, period: 'day', conditions: [{ key: 'api_key', value: key.id }] });
    const user = unique('both');
    try {
      const minute = Math.floor(Date.now() / 60_000);
      expect((await chatAt(gw.url, key.secret, model, user)).status).toBe(200); // the budget's one request
      await recordsOf(user, 1);
      for (let i = 0; i < 3; i++) {
        const refused = await chatAt(gw.url, key.secret, model, user);
        expect(refused.status).toBe(429);
        expect(refused.body.error.code).toBe('budget_exceeded');
      }
      await call(gw, 'DELETE', `/v1/policies/budgets/${budget.id}`);
      await new Promise((r) => setTimeout(r, 50));
      const after = [await chatAt(gw.url, key.secret, model, user), await chatAt(gw.url, key.secret, model, user)];
      if (Math.floor(Date.now() / 60_000) !== minute) return; // the window turned mid-test: nothing to compare
      // One unit went to the admitted request; the three refusals gave theirs back: one is left.
      expect(after.map((r) => r.status)).toEqual([200, 429]);
      expect(after[1]!.body.error.code).toBe('rate_limit_exceeded');
    } finally {
      await call(gw, 'DELETE', `/v1/policies/budgets/${budget.id}`);
      await call(gw, 'DELETE', `/v1/policies/rate-limits/${policy.body.id}`);
    }
  });

  it('counts per period: spend of an earlier period does not count (the period resets)', async () => {
    const ops = await import('../../functions/shared/db/ops');
    const key = await gatewayKey();
    const model = await pricedModel(0.001);
    const budget = await createBudget({ limit_usd: 0.002, period: 'day', conditions: [{ key: 'api_key', value: key.id }] });
    const yesterday = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 86_400_000;
    // Yesterday's counter, far over the limit.
    await ops.updateItem('usage', { pk: `WS#${gw.workspaceId}#BUD#${budget.id}#all`, sk: `budget#day#${yesterday}` }, { add: { spent_nusd: 5_000_000 } });
    expect((await chatAt(gw.url, key.secret, model, unique('reset'))).status).toBe(200);
    await call(gw, 'DELETE', `/v1/policies/budgets/${budget.id}`);
  });

  it('groups by metadata: each _user has a budget of their own', async () => {
    const model = await pricedModel(0.001);
    const budget = await createBudget({
      limit_usd: 0.001,
      period: 'total',
      conditions: [{ key: 'model', value: model }],
      group_by: [{ key: 'metadata._user' }],
    });
    const [alice, bob] = [unique('alice'), unique('bob')];
    expect((await chatAt(gw.url, gw.adminKey, model, alice)).status).toBe(200);
    await recordsOf(alice, 1);
    expect((await chatAt(gw.url, gw.adminKey, model, alice)).status).toBe(429);
    expect((await chatAt(gw.url, gw.adminKey, model, bob)).status).toBe(200);
    await call(gw, 'DELETE', `/v1/policies/budgets/${budget.id}`);
  });

  it('emits one event per threshold crossed, and one when the limit is reached', async () => {
    const lines: string[] = [];
    // Warnings go to stderr, metrics to stdout.
    const capture = (chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    };
    const spies = [vi.spyOn(process.stdout, 'write').mockImplementation(capture), vi.spyOn(process.stderr, 'write').mockImplementation(capture)];
    try {
      const key = await gatewayKey();
      const model = await pricedModel(0.001);
      const budget = await createBudget({ limit_usd: 0.004, period: 'week', alert_thresholds: [0.5, 0.75], conditions: [{ key: 'api_key', value: key.id }] });
      const user = unique('alerts');
      for (let i = 0; i < 4; i++) {
        expect((await chatAt(gw.url, key.secret, model, user)).status).toBe(200);
        await recordsOf(user, i + 1);
      }
      const eventsSoFar = () =>
        lines
          .flatMap((l) => l.split('\n'))
          .filter((l) => l.includes(budget.id) && l.includes('"message"'))
          .map((l) => JSON.parse(l));
      // An event comes with its charge's answer, which can arrive after the record is readable.
      for (let i = 0; i < 100 && eventsSoFar().length < 3; i++) await new Promise((r) => setTimeout(r, 50));
      const events = eventsSoFar();
      expect(events.map((e) => [e.message, e.threshold])).toEqual([
        ['budget threshold crossed', 0.5],
        ['budget threshold crossed', 0.75],
        ['budget exhausted', 1],
      ]);
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });
});

describe('two gateway processes sharing DynamoDB (the "done when" of budgets)', () => {
  it('a $0.01 monthly budget on one key, priced from the catalogue: refused with budget_exceeded, overshoot within the bound, spend report = sum of the log records', async () => {
    const key = await gatewayKey();
    const limit = 0.01;
    // GPT-4's list price ($30 / $60 per million tokens): a few requests spend the budget.
    const model = 'gpt-4';
    const budget = await createBudget({ name: 'one cent', limit_usd: limit, period: 'month', conditions: [{ key: 'api_key', value: key.id }] });
    const child = await startChildGateway(gw);
    try {
      const user = unique('two-procs');
      const concurrencyPerProcess = 4;
      let ok = 0;
      let refused = 0;
      // Waves of concurrent requests from both processes until every one is refused.
      for (let wave = 0; wave < 20; wave++) {
        const results = await Promise.all(
          Array.from({ length: 2 * concurrencyPerProcess }, (_, i) => chatAt(i % 2 ? child.url : gw.url, key.secret, model, user)),
        );
        for (const r of results) {
          if (r.status === 200) ok++;
          else {
            expect(r.status).toBe(429);
            expect(r.body.error.code).toBe('budget_exceeded');
            refused++;
          }
        }
        await recordsOf(user, ok + refused);
        if (results.every((r) => r.status === 429)) break;
      }
      expect(refused).toBeGreaterThan(0);
      const records = await recordsOf(user, ok + refused);
      expect(records).toHaveLength(ok + refused);
      const admitted = records.filter((r) => r.status === 200);
      expect(admitted).toHaveLength(ok);
      expect(admitted.every((r) => r.price_source === 'catalogue' && r.cost_usd > 0)).toBe(true);
      const sum = (f: (r: any) => number) => records.reduce((a, r) => a + f(r), 0);
      const costOfRecords = Math.round(sum((r) => r.cost_usd ?? 0) * 1e9) / 1e9;
      // The stated bound: spent reaches the limit and passes it by at most (N - 1) x the
      // largest cost of one request, N = the requests in flight at once across both processes.
      const inFlight = 2 * concurrencyPerProcess;
      const largest = Math.max(...admitted.map((r) => r.cost_usd));
      expect(costOfRecords).toBeGreaterThanOrEqual(limit);
      expect(costOfRecords).toBeLessThanOrEqual(limit + (inFlight - 1) * largest + 1e-9);

      const report = await call(gw, 'GET', '/v1/analytics/spend?group_by=api_key');
      const row = report.body.data.filter((r: { group: string }) => r.group === key.id);
      const totals = row.reduce(
        (a: any, r: any) => ({ requests: a.requests + r.requests, total_tokens: a.total_tokens + r.total_tokens, cost_usd: a.cost_usd + r.cost_usd }),
        { requests: 0, total_tokens: 0, cost_usd: 0 },
      );
      expect(totals.requests).toBe(records.length);
      expect(totals.total_tokens).toBe(sum((r) => r.usage?.total_tokens ?? 0));
      expect(totals.cost_usd).toBeCloseTo(costOfRecords, 9);
    } finally {
      await child.stop();
      await call(gw, 'DELETE', `/v1/policies/budgets/${budget.id}`);
    }
  });
});
