import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { startOwnDataGateway, type OwnDataGateway } from '../support/own-data-gateway';

/**
 * A request's log record and its charges (spend counters, budget) survive the gateway's
 * death: a gateway with its own data folder answers a burst of concurrent requests, is
 * killed (SIGKILL of node, in either threading mode, or of node and DynamoDB Local's JVM)
 * right after the last answer, or stopped with SIGTERM, and started again on the same
 * folder. Every request answered more than the stated window before the kill has its
 * record; every stored record is charged to its budget exactly once and counted once in
 * the spend report (docs/usage.md, "Request logs", "Under a crash").
 */

/**
 * The stated window (docs/usage.md, "Under a crash"): with a data folder, a record is journaled
 * in the turn after its answer is sent, so only answers of the last few milliseconds before
 * `kill -9` can lose theirs; asserted at the 50 ms goal.
 */
const CRASH_WINDOW_MS = 50;
const REQUESTS = 120;
const CONCURRENCY = 12;
const COST_USD = 0.001;

let fake: FakeServer;
const dirs: string[] = [];
const running: OwnDataGateway[] = [];

beforeAll(async () => {
  fake = await startOpenAIFake({ latencyMs: 15 });
});
afterAll(async () => {
  await Promise.all(running.map((g) => g.kill()));
  await fake?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function start(dir: string, env: Record<string, string> = {}): Promise<OwnDataGateway> {
  const gw = await startOwnDataGateway(dir, env);
  running.push(gw);
  return gw;
}

async function api(gw: OwnDataGateway, method: string, path: string, body?: unknown, key = gw.adminKey) {
  const res = await fetch(gw.url + path, {
    method,
    headers: { 'x-gateway-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

interface Setup {
  key: { id: string; secret: string };
  model: string;
  budgetId: string;
  user: string;
}

/** A gateway key, a model priced at exactly COST_USD a request, and a budget on the key. */
async function setUp(gw: OwnDataGateway, name: string): Promise<Setup> {
  const key = await api(gw, 'POST', '/v1/api-keys', { name, scopes: ['gateway'] });
  expect(key.status).toBe(200);
  const model = `crash-model-${name}`;
  expect((await api(gw, 'POST', '/v1/prices', { provider: 'openai', model, per_request: COST_USD })).status).toBe(200);
  const budget = await api(gw, 'POST', '/v1/policies/budgets', {
    type: 'budget',
    name,
    // Below BUDGET_SHARD_MIN_USD: one counter, so lowering the limit later reads the exact spend
    // in the 429 (sharded budgets are sharded-limits.test.ts's).
    limit_usd: 10,
    period: 'month',
    conditions: [{ key: 'api_key', value: key.body.id }],
  });
  expect(budget.status).toBe(200);
  return { key: { id: key.body.id, secret: key.body.secret }, model, budgetId: budget.body.id, user: `user-${name}-${Date.now()}` };
}

function chat(gw: OwnDataGateway, s: Setup, i: number) {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': s.key.secret,
      'x-gateway-provider': 'openai',
      'x-gateway-custom-host': `${fake.url}/v1`,
      authorization: 'Bearer sk-test',
      'x-gateway-metadata': JSON.stringify({ _user: s.user }),
    },
    body: JSON.stringify({ model: s.model, messages: [{ role: 'user', content: `request ${i}` }] }),
  });
}

/** REQUESTS chat requests, CONCURRENCY at a time; each answer's trace id and the moment its body was read. */
async function burst(gw: OwnDataGateway, s: Setup): Promise<Array<{ traceId: string; answeredAt: number }>> {
  const answers: Array<{ traceId: string; answeredAt: number }> = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS) {
        const res = await chat(gw, s, next++);
        await res.arrayBuffer();
        expect(res.status).toBe(200);
        answers.push({ traceId: res.headers.get('x-gateway-trace-id')!, answeredAt: performance.now() });
      }
    }),
  );
  return answers;
}

async function recordsOf(gw: OwnDataGateway, user: string): Promise<Array<{ id: string; trace_id: string; cost_usd: number }>> {
  const all = [];
  let after: string | undefined;
  do {
    const page = await api(gw, 'GET', `/v1/logs?metadata._user=${user}&limit=100${after ? `&after=${after}` : ''}`);
    expect(page.status).toBe(200);
    all.push(...page.body.data);
    after = page.body.has_more ? page.body.last_id : undefined;
  } while (after);
  return all;
}

/** The key's requests and cost in the spend report. */
async function spendOf(gw: OwnDataGateway, keyId: string): Promise<{ requests: number; cost_usd: number }> {
  const report = await api(gw, 'GET', '/v1/analytics/spend?group_by=api_key');
  expect(report.status).toBe(200);
  const rows = report.body.data.filter((r: { group: string }) => r.group === keyId);
  return rows.reduce(
    (a: { requests: number; cost_usd: number }, r: { requests: number; cost_usd: number }) => ({
      requests: a.requests + r.requests,
      cost_usd: a.cost_usd + r.cost_usd,
    }),
    {
      requests: 0,
      cost_usd: 0,
    },
  );
}

/** What the budget has been charged: lower its limit below any spend, and read the refusal. */
async function budgetSpent(gw: OwnDataGateway, s: Setup): Promise<number> {
  expect((await api(gw, 'PUT', `/v1/policies/budgets/${s.budgetId}`, { limit_usd: 1e-9 })).status).toBe(200);
  const res = await chat(gw, s, -1);
  await res.arrayBuffer();
  expect(res.status).toBe(429);
  return Number(res.headers.get('x-budget-spent-usd'));
}

/** Once spend counts every record (charges left by a dead process are applied after a restart), or after `ms`. */
async function settledSpend(gw: OwnDataGateway, s: Setup, records: number, ms: number) {
  const deadline = Date.now() + ms;
  let spend = await spendOf(gw, s.key.id);
  while (spend.requests < records && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    spend = await spendOf(gw, s.key.id);
  }
  return spend;
}

const usd = (x: number) => Math.round(x * 1e9) / 1e9;

/** The measured figures (docs/usage.md, "Request logs", "Under a crash"). */
const report = (line: string) => process.stderr.write(`crash-records: ${line}\n`);

async function assertAccounted(gw: OwnDataGateway, s: Setup, answers: Array<{ traceId: string; answeredAt: number }>, endedAt: number, windowMs: number) {
  const records = await recordsOf(gw, s.user);
  const stored = new Set(records.map((r) => r.trace_id));
  const lost = answers.filter((a) => !stored.has(a.traceId));
  const lostAges = lost.map((a) => Math.round(endedAt - a.answeredAt));
  // Every answer older than the window has its record.
  expect(
    lostAges.filter((age) => age > windowMs),
    `records lost, ms before the end: ${lostAges.join(', ')}`,
  ).toEqual([]);
  expect(records.length).toBeGreaterThan(REQUESTS / 2);
  // Every record that survived is counted, once, in the spend report (re-derived after a crash).
  const spend = await settledSpend(gw, s, records.length, 15_000);
  expect(spend.requests).toBe(records.length);
  expect(usd(spend.cost_usd)).toBe(usd(records.length * COST_USD));
  // The budget: every stored record charged, once (the journal knows which group charges were applied).
  expect(usd(await budgetSpent(gw, s))).toBe(usd(records.length * COST_USD));
  return { records: records.length, lostAges };
}

/** Worker-thread mode of the local runtime (infra/local/server.ts). */
const WORKER_THREADS = { GATEWAY_WORKER_THREADS: '2' };

/**
 * The cases run one after another on one data folder, each on the gateway the case before
 * restarted (a gateway's start, with its JVM, is most of a case's cost): a restart after a
 * crash also restores and re-derives on top of the earlier cases' data, as a real folder
 * would. A case run alone starts its own.
 */
let dir: string | undefined;
let current: { gw: OwnDataGateway; workers: boolean } | undefined;

/** The running gateway, in the given threading mode (restarted cleanly into it if need be). */
async function gatewayIn(workers: boolean): Promise<OwnDataGateway> {
  if (current?.workers === workers) return current.gw;
  if (current) expect(await current.gw.terminate()).toBe(0);
  return restartIn(workers);
}

const CASES = ['kill', 'term-main', 'kill-workers', 'term-workers', 'kill-both'] as const;
let setups: Record<(typeof CASES)[number], Setup> | undefined;

/**
 * Every case's key, price and budget, made before any request: a gateway caches a
 * workspace's prices for up to 10 s, so a price made after an earlier case's requests would
 * not yet be seen by every worker thread.
 */
async function setupFor(gw: OwnDataGateway, name: (typeof CASES)[number]): Promise<Setup> {
  setups ??= Object.fromEntries(await Promise.all(CASES.map(async (c) => [c, await setUp(gw, c)]))) as Record<(typeof CASES)[number], Setup>;
  return setups[name];
}

/** A gateway started again on the folder (a new one for the first case). */
async function restartIn(workers: boolean): Promise<OwnDataGateway> {
  if (!dir) {
    dir = mkdtempSync(join(tmpdir(), 'gateway-crash-'));
    dirs.push(dir);
  }
  const gw = await start(dir, workers ? WORKER_THREADS : {});
  current = { gw, workers };
  return gw;
}

describe('request-log records and charges when the gateway dies', () => {
  /**
   * `kill -9` right after a burst (of node alone, or with DynamoDB Local's JVM), then a
   * restart in the same mode: records older than the window are there, each charged and
   * counted once (the journal restores what DynamoDB Local had acknowledged but not
   * committed, and the charges it had not applied; the spend counters are re-derived).
   */
  async function killedCase(name: 'kill' | 'kill-workers' | 'kill-both', what: string) {
    const workers = name === 'kill-workers';
    let gw = await gatewayIn(workers);
    const s = await setupFor(gw, name);
    const answers = await burst(gw, s);
    const killedAt = performance.now();
    // killNode sends SIGKILL at once, then waits for the gateway's watchdog to stop DynamoDB Local.
    await (name === 'kill-both' ? gw.kill() : gw.killNode());

    gw = await restartIn(workers);
    const { lostAges } = await assertAccounted(gw, s, answers, killedAt, CRASH_WINDOW_MS);
    report(`SIGKILL of ${what}: ${lostAges.length} of ${REQUESTS} records lost, answered ${lostAges.join(', ')} ms before the kill`);
  }

  /** After SIGTERM, every record and charge is there; the next case uses a gateway in the other mode. */
  async function terminatedCase(workers: boolean) {
    let gw = await gatewayIn(workers);
    const s = await setupFor(gw, workers ? 'term-workers' : 'term-main');
    const answers = await burst(gw, s);
    expect(await gw.terminate()).toBe(0);
    const endedAt = performance.now();

    // Read back by a gateway in the other mode, which the next case then uses.
    gw = await restartIn(!workers);
    const { records } = await assertAccounted(gw, s, answers, endedAt, -1);
    expect(records).toBe(REQUESTS);
  }

  it(
    'SIGKILL of the gateway right after a burst: every answer older than the window has its record; every record is charged to the budget and counted, once',
    () => killedCase('kill', 'node'),
    240_000,
  );

  it('SIGTERM right after a burst (main thread): every record and charge is written before the process ends', () => terminatedCase(false), 240_000);

  it(
    "SIGKILL of a gateway in worker-thread mode: each thread's journaled records and charges are restored, each charged once",
    () => killedCase('kill-workers', 'node (worker threads)'),
    240_000,
  );

  it('SIGTERM right after a burst (worker threads): every record and charge is written before the process ends', () => terminatedCase(true), 240_000);

  it(
    'SIGKILL of the gateway and of DynamoDB Local at once: the journal restores what DynamoDB Local had not committed; each record is charged and counted once',
    () => killedCase('kill-both', 'node and Java'),
    240_000,
  );
});
