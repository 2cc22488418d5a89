import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startAnthropicFake, startGeminiFake, startOpenAIFake, type FakeServer } from '../fakes';
import { call, errorOf, startTestGateway } from '../support/gateway';
import type { SpendTotals } from '../../functions/spend/report';

// Spend reports (`GET /v1/analytics/spend`) against the request log: after a known mix of
// requests (several workspaces, keys, providers, models and metadata values, streamed and
// not, some concurrent, one refused), every group's requests, tokens, cost and unpriced
// count equal the sums over the log records the logs API returns for it.

let gw: LocalGateway;
let openai: FakeServer;
let anthropic: FakeServer;
let gemini: FakeServer;

interface Workspace {
  id: string;
  slug: string;
  /** Admin-scoped key of this workspace: reads its logs. */
  admin: string;
  /** Keys with the gateway scope only: "workspace keys". */
  keys: { id: string; secret: string }[];
}

const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
let a: Workspace;
let b: Workspace;
let c: Workspace;
const startedAt = Math.floor(Date.now() / 1000);

async function workspace(name: string, gatewayKeys: number): Promise<Workspace> {
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: `${name} ${run}`, slug: `${name}-${run}` } });
  expect(ws.status, ws.text).toBe(200);
  const key = async (scopes: string[]) => {
    const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: `${name}-${scopes.join('-')}`, workspace_id: ws.body.id, scopes } });
    expect(created.status, created.text).toBe(200);
    return { id: created.body.id as string, secret: created.body.secret as string };
  };
  const admin = await key(['admin', 'gateway']);
  const keys = [];
  for (let i = 0; i < gatewayKeys; i++) keys.push(await key(['gateway']));
  return { id: ws.body.id, slug: ws.body.slug, admin: admin.secret, keys };
}

const via = {
  openai: () => ({ 'x-gateway-provider': 'openai', authorization: 'Bearer sk-openai', 'x-gateway-custom-host': `${openai.url}/v1` }),
  anthropic: () => ({ 'x-gateway-provider': 'anthropic', authorization: 'Bearer sk-ant', 'x-gateway-custom-host': `${anthropic.url}/v1` }),
  google: () => ({ 'x-gateway-provider': 'google', authorization: 'Bearer gemini-key', 'x-gateway-custom-host': `${gemini.url}/v1beta` }),
};

interface Send {
  key: string;
  provider: keyof typeof via;
  model: string;
  stream?: boolean;
  metadata?: Record<string, string>;
  words?: number;
}

/** One chat completion; streamed ones are read to the end (their usage arrives last). */
async function chat(s: Send): Promise<void> {
  const content = Array.from({ length: s.words ?? 3 }, (_, i) => `word${i}`).join(' ');
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': s.key,
      ...via[s.provider](),
      ...(s.metadata ? { 'x-gateway-metadata': JSON.stringify(s.metadata) } : {}),
    },
    body: JSON.stringify({
      model: s.model,
      messages: [{ role: 'user', content }],
      ...(s.stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    }),
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  if (s.stream) expect(text).toContain('data: [DONE]');
}

interface LogRecord {
  id: string;
  workspace_id: string;
  api_key_id: string;
  provider: string | null;
  model: string | null;
  status: number;
  stream: boolean;
  metadata: Record<string, string>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  cost_usd?: number | null;
  pricing_unknown?: boolean;
  created_at: number;
}

/** Every log record of a workspace (its admin key reads them), once `count` have been written. */
async function logRecords(ws: Workspace, count: number): Promise<LogRecord[]> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const records: LogRecord[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await call(gw, 'GET', `/v1/logs?limit=100${after ? `&after=${after}` : ''}`, { key: ws.admin });
      expect(page.status, page.text).toBe(200);
      records.push(...page.body.data);
      if (!page.body.has_more) break;
      after = page.body.last_id;
    }
    if (records.length >= count) return records;
    await sleep(50);
  }
  throw new Error(`fewer than ${count} log records in ${ws.slug}`);
}

/** What a report row and its totals sum. */
type Sums = SpendTotals;

const RANGE = () => `from=${startedAt - 7200}&to=${Math.floor(Date.now() / 1000) + 7200}`;

const spend = (key: string, query: string) => call(gw, 'GET', `/v1/analytics/spend?${query}`, { key });

/**
 * What the report must say, from the records: per (period, group), the sums. Cost is summed
 * in whole nano-dollars, as records carry it (null counts 0; `pricing_unknown` counts unpriced).
 */
function expected(records: LogRecord[], group: (r: LogRecord) => string | null | undefined, step: number) {
  const rows = new Map<string, { period_start: string; group: string | null; nano: number } & Omit<Sums, 'cost_usd'>>();
  for (const r of records) {
    const g = group(r);
    if (g === undefined) continue;
    const period_start = new Date(Math.floor(r.created_at / step) * step * 1000).toISOString().replace('.000Z', 'Z');
    const id = `${period_start} ${g}`;
    const row =
      rows.get(id) ??
      rows.set(id, { period_start, group: g, requests: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, nano: 0, unpriced_requests: 0 }).get(id)!;
    row.requests++;
    row.prompt_tokens += r.usage?.prompt_tokens ?? 0;
    row.completion_tokens += r.usage?.completion_tokens ?? 0;
    row.total_tokens += r.usage?.total_tokens ?? 0;
    row.nano += Math.round((r.cost_usd ?? 0) * 1e9);
    row.unpriced_requests += r.pricing_unknown ? 1 : 0;
  }
  const byId = (x: { period_start: string; group: string | null }) => `${x.period_start} ${x.group ?? ''}`;
  return [...rows.values()].map(({ nano, ...row }) => ({ ...row, cost_usd: nano / 1e9 })).sort((x, y) => (byId(x) < byId(y) ? -1 : 1));
}

const sorted = (data: Array<{ period_start: string; group: string | null }>) =>
  [...data].sort((x, y) => (`${x.period_start} ${x.group ?? ''}` < `${y.period_start} ${y.group ?? ''}` ? -1 : 1));

function totalsOf(rows: Sums[]): Sums {
  const t = { requests: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cost_usd: 0, unpriced_requests: 0 };
  let nano = 0;
  for (const r of rows) {
    t.requests += r.requests;
    t.prompt_tokens += r.prompt_tokens;
    t.completion_tokens += r.completion_tokens;
    t.total_tokens += r.total_tokens;
    nano += Math.round(r.cost_usd * 1e9);
    t.unpriced_requests += r.unpriced_requests;
  }
  return { ...t, cost_usd: nano / 1e9 };
}

/** The report once its counters have caught up with `requests` records (they are written right after the record). */
async function settledReport(key: string, query: string, requests: number) {
  for (let attempt = 0; attempt < 100; attempt++) {
    const res = await spend(key, query);
    expect(res.status, res.text).toBe(200);
    if (res.body.totals.requests >= requests) return res;
    await sleep(50);
  }
  throw new Error(`the spend report never reached ${requests} requests`);
}

let recordsA: LogRecord[];
let recordsB: LogRecord[];
let sentA = 0;
let sentB = 0;

beforeAll(async () => {
  [openai, anthropic, gemini] = await Promise.all([startOpenAIFake(), startAnthropicFake(), startGeminiFake()]);
  gw = await startTestGateway();
  a = await workspace('spend-a', 2);
  b = await workspace('spend-b', 1);
  c = await workspace('spend-c', 1);

  const [a1, a2] = [a.keys[0]!.secret, a.keys[1]!.secret];
  const sends: Send[] = [
    { key: a1, provider: 'openai', model: 'gpt-4o-mini', metadata: { _user: `u1-${run}`, team: 'search' }, words: 4 },
    { key: a1, provider: 'openai', model: 'gpt-4o-mini', metadata: { _user: `u1-${run}`, team: 'search' }, words: 9 },
    { key: a1, provider: 'openai', model: 'gpt-4o-mini', stream: true, metadata: { _user: `u2-${run}` }, words: 6 },
    { key: a1, provider: 'openai', model: 'fake-tools', stream: true, words: 2 },
    { key: a1, provider: 'anthropic', model: 'claude-haiku-4-5-20251001', metadata: { team: 'chat' }, words: 5 },
    { key: a1, provider: 'anthropic', model: 'claude-sonnet-4-5-20250929', stream: true, metadata: { team: 'chat', _user: `u2-${run}` }, words: 7 },
    { key: a2, provider: 'google', model: 'gemini-2.5-flash', metadata: { _user: `u1-${run}` }, words: 3 },
    { key: a2, provider: 'google', model: 'gemini-2.5-pro', stream: true, words: 8 },
  ];
  for (const s of sends) await chat(s);
  // Concurrent requests of one process share their counter writes.
  await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      chat({
        key: i % 2 ? a1 : a2,
        provider: i % 3 ? 'openai' : 'anthropic',
        model: i % 3 ? 'gpt-4o-mini' : 'claude-haiku-4-5-20251001',
        stream: i % 4 === 0,
        metadata: { _user: `u${i % 3}-${run}` },
        words: i + 1,
      }),
    ),
  );
  // A request refused before routing (no messages) is logged, and counted, without a provider's usage.
  const refused = await call(gw, 'POST', '/v1/chat/completions', { key: a2, body: { model: 'gpt-4o-mini' }, headers: via.openai() });
  expect(refused.status, refused.text).toBe(400);
  sentA = sends.length + 12 + 1;

  for (let i = 0; i < 3; i++) await chat({ key: b.keys[0]!.secret, provider: 'openai', model: 'gpt-4o-mini', metadata: { _user: `u1-${run}` }, words: 2 + i });
  sentB = 3;

  recordsA = await logRecords(a, sentA);
  recordsB = await logRecords(b, sentB);
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await Promise.all([openai, anthropic, gemini].map((f) => f?.close()));
});

describe('a workspace key’s spend report', () => {
  it('the mix of requests is what the test means it to be', () => {
    expect(recordsA).toHaveLength(sentA);
    expect(new Set(recordsA.filter((r) => r.status === 200).map((r) => r.provider))).toEqual(new Set(['openai', 'anthropic', 'google']));
    expect(recordsA.some((r) => r.stream && (r.usage?.total_tokens ?? 0) > 0)).toBe(true);
    expect(recordsA.filter((r) => r.status === 400)).toHaveLength(1);
  });

  const DIMENSIONS: Array<[groupBy: string, group: (r: LogRecord) => string | null | undefined]> = [
    ['workspace', (r) => r.workspace_id],
    ['api_key', (r) => r.api_key_id],
    ['provider', (r) => r.provider],
    ['model', (r) => r.model],
    ['metadata._user', (r) => r.metadata._user || undefined],
    ['metadata.team', (r) => r.metadata.team || undefined],
  ];

  it.each(DIMENSIONS)('group_by=%s, per day: every group equals the sums over its log records', async (groupBy, group) => {
    const want = expected(recordsA, group, 86_400);
    const res = await settledReport(a.keys[0]!.secret, `group_by=${groupBy}&${RANGE()}`, totalsOf(want).requests);
    expect(res.body).toMatchObject({ object: 'list', group_by: groupBy, granularity: 'day', workspace_id: a.id });
    expect(sorted(res.body.data)).toEqual(want);
    expect(res.body.totals).toEqual(totalsOf(want));
    if (groupBy !== 'metadata._user' && groupBy !== 'metadata.team') expect(res.body.totals.requests).toBe(sentA);
  });

  it('per hour, too, with ISO bounds', async () => {
    const from = new Date((startedAt - 3600) * 1000).toISOString();
    const res = await settledReport(a.keys[1]!.secret, `group_by=model&granularity=hour&from=${from}`, sentA);
    expect(res.body.granularity).toBe('hour');
    expect(res.body.from).toBe(new Date(Math.floor((startedAt - 3600) / 3600) * 3600 * 1000).toISOString().replace('.000Z', 'Z'));
    expect(sorted(res.body.data)).toEqual(expected(recordsA, (r) => r.model, 3600));
  });

  it('never shows another workspace: B’s key sees B only, and naming A is a 403', async () => {
    const own = await settledReport(b.keys[0]!.secret, `group_by=api_key&${RANGE()}`, sentB);
    expect(own.body.workspace_id).toBe(b.id);
    expect(sorted(own.body.data)).toEqual(expected(recordsB, (r) => r.api_key_id, 86_400));
    expect(own.body.data.map((r: { group: string }) => r.group)).toEqual(own.body.data.map(() => b.keys[0]!.id));
    const users = await settledReport(b.keys[0]!.secret, `group_by=metadata._user&${RANGE()}`, sentB);
    expect(users.body.totals.requests).toBe(sentB);
    for (const ref of [a.id, a.slug, `nope-${run}`]) {
      const other = await spend(b.keys[0]!.secret, `workspace_id=${ref}&${RANGE()}`);
      expect(other.status).toBe(403);
      expect(errorOf(other)).toMatchObject({ type: 'permission_error', param: 'workspace_id' });
    }
    const byOwnSlug = await settledReport(b.keys[0]!.secret, `workspace_id=${b.slug}&${RANGE()}`, sentB);
    expect(byOwnSlug.body.totals).toEqual(own.body.totals);
  });
});

describe('an organisation admin’s spend report', () => {
  it('covers every workspace of the organisation', async () => {
    const res = await settledReport(gw.adminKey, `group_by=workspace&${RANGE()}`, sentA + sentB);
    expect(res.body.workspace_id).toBeNull();
    expect(sorted(res.body.data)).toEqual(expected([...recordsA, ...recordsB], (r) => r.workspace_id, 86_400));
    const models = await settledReport(gw.adminKey, `group_by=model&${RANGE()}`, sentA + sentB);
    expect(sorted(models.body.data)).toEqual(expected([...recordsA, ...recordsB], (r) => r.model, 86_400));
    const wantUsers = expected([...recordsA, ...recordsB], (r) => r.metadata._user || undefined, 86_400);
    const users = await settledReport(gw.adminKey, `group_by=metadata._user&${RANGE()}`, totalsOf(wantUsers).requests);
    expect(sorted(users.body.data)).toEqual(wantUsers);
  });

  it('narrows to one workspace with workspace_id (id or slug); one outside the organisation is a 404', async () => {
    const bySlug = await settledReport(gw.adminKey, `group_by=provider&workspace_id=${b.slug}&${RANGE()}`, sentB);
    expect(bySlug.body.workspace_id).toBe(b.id);
    expect(sorted(bySlug.body.data)).toEqual(expected(recordsB, (r) => r.provider, 86_400));
    // A's admin key is a workspace admin of A (docs/api.md, "Roles and migration"): B is not its to read.
    const fromA = await spend(a.admin, `group_by=provider&workspace_id=${b.id}&${RANGE()}`);
    expect(fromA.status).toBe(403);
    expect(errorOf(fromA)).toMatchObject({ type: 'permission_error', code: 'insufficient_role', param: 'workspace_id' });
    const missing = await spend(gw.adminKey, `workspace_id=ws_missing_${run}`);
    expect(missing.status).toBe(404);
    expect(errorOf(missing)).toMatchObject({ type: 'not_found_error', param: 'workspace_id' });
  });
});

describe('many concurrent requests', () => {
  it('are counted exactly', async () => {
    const key = c.keys[0]!.secret;
    const N = 60;
    const { storageCalls } = await import('../../functions/shared/db/client');
    const updatesBefore = storageCalls.UpdateItemCommand ?? 0;
    await Promise.all(
      Array.from({ length: N }, (_, i) =>
        chat({ key, provider: 'openai', model: 'gpt-4o-mini', stream: i % 5 === 0, metadata: { _user: `u${i % 4}` }, words: 1 + (i % 7) }),
      ),
    );
    const records = await logRecords(c, N);
    expect(records).toHaveLength(N);
    const res = await settledReport(key, `group_by=metadata._user&${RANGE()}`, N);
    expect(sorted(res.body.data)).toEqual(expected(records, (r) => r.metadata._user, 86_400));
    // Nothing more arrives later: counters are exact, not at least.
    await sleep(300);
    const again = await spend(key, `group_by=workspace&${RANGE()}`);
    expect(again.body.totals).toEqual(totalsOf(expected(records, (r) => r.workspace_id, 86_400)));
    expect(again.body.totals.requests).toBe(N);
    // Each request adds to 2 counters (its key-provider-model cell and its _user: 5 distinct
    // ones here). The requests overlap in this process, so their increments are held and
    // shared: about one UpdateItem per counter, far from one per request and counter.
    const updates = (storageCalls.UpdateItemCommand ?? 0) - updatesBefore;
    expect(updates).toBeGreaterThanOrEqual(5);
    expect(updates).toBeLessThan(N);
  });
});

/** A request-log record as the pricing step hands it to the spend counters (cost_usd in whole nano-dollars, null when unknown). */
function spendRecord(workspaceId: string, keyId: string, r: { id: string; model: string; cost_usd: number | null; created_at?: number }) {
  return {
    object: 'request_log' as const,
    id: r.id,
    trace_id: 't',
    workspace_id: workspaceId,
    organisation_id: gw.organisationId,
    api_key_id: keyId,
    method: 'POST',
    path: '/v1/chat/completions',
    route: 'chat',
    provider: 'openai',
    managed_provider: null,
    model: r.model,
    status: 200,
    stream: false,
    latency_ms: 1,
    upstream_latency_ms: 1,
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    cache_status: null,
    retry_count: 0,
    attempts: [],
    metadata: {},
    error: null,
    created_at: r.created_at ?? Math.floor(Date.now() / 1000),
    cost_usd: r.cost_usd,
    price_source: r.cost_usd === null ? null : ('catalogue' as const),
    pricing_unknown: r.cost_usd === null,
  };
}

describe('cost', () => {
  it('is summed exactly in nano-dollars, and unpriced requests are counted apart', async () => {
    // Records as the pricing step writes them (cost_usd in whole nano-dollars, null when the
    // price is unknown), added to the counters the way the request log does.
    const { recordSpend } = await import('../../functions/spend/counters');
    const d = await workspace('spend-d', 1);
    const record = (cost_usd: number | null, model: string) => spendRecord(d.id, d.keys[0]!.id, { id: `log_${model}`, model, cost_usd });
    const costs = [0.1, 0.2, 0.000000001, 0.000123456, null];
    await Promise.all(costs.map((cost, i) => recordSpend(record(cost, cost === null ? 'custom-model' : `m${i % 2}`))));
    const res = await spend(d.keys[0]!.secret, `group_by=model&${RANGE()}`);
    expect(res.body.totals).toMatchObject({ requests: 5, cost_usd: 0.300123457, unpriced_requests: 1, total_tokens: 10 });
    expect(res.body.data.map((r: Sums & { group: string }) => [r.group, r.cost_usd, r.unpriced_requests])).toEqual([
      ['custom-model', 0, 1],
      ['m0', 0.100000001, 0],
      ['m1', 0.200123456, 0],
    ]);
  });
});

describe('counters written before cells (one counter per dimension)', () => {
  it('are still summed: an hour of them and an hour of cells make one report', async () => {
    const ops = await import('../../functions/shared/db/ops');
    const { recordSpend } = await import('../../functions/spend/counters');
    const { hourLabel } = await import('../../functions/spend/periods');
    const e = await workspace('spend-e', 1);
    const keyId = e.keys[0]!.id;
    const now = Math.floor(Date.now() / 1000);
    const lastHour = hourLabel(now - 3600);
    // What a request of the last hour wrote before cells: one counter per dimension.
    const old = { requests: 2, prompt_tokens: 4, completion_tokens: 6, total_tokens: 10, cost_nano_usd: 3000, unpriced_requests: 0 };
    for (const [dimension, value] of [
      ['api_key', keyId],
      ['provider', 'openai'],
      ['model', 'gpt-4o-mini'],
    ] as const) {
      await ops.updateItem('usage', { pk: `WS#${e.id}#SPEND#${dimension}`, sk: `${lastHour}#${value}` }, { set: { ttl: now + 86_400 }, add: old });
    }
    // And a request of this hour, counted in its cell.
    await recordSpend(spendRecord(e.id, keyId, { id: 'log_cells', model: 'gpt-4o-mini', cost_usd: 0.000001, created_at: now }));
    const range = `from=${now - 7200}&to=${now + 3600}`;
    for (const groupBy of ['workspace', 'api_key', 'provider', 'model']) {
      const res = await spend(e.keys[0]!.secret, `group_by=${groupBy}&granularity=day&${range}`);
      expect(res.status, res.text).toBe(200);
      expect(res.body.totals, groupBy).toMatchObject({ requests: 3, total_tokens: 12, cost_usd: 0.000004 });
      const groups = new Set(res.body.data.map((r: { group: string }) => r.group));
      expect(groups, groupBy).toEqual(new Set([{ workspace: e.id, api_key: keyId, provider: 'openai', model: 'gpt-4o-mini' }[groupBy]]));
    }
  });
});

describe('sharded counters (COUNTER_SHARDS, 32 by default)', () => {
  it("spread one counter's writes over its shards, and a report sums them with the unsharded item written before sharding", async () => {
    const ops = await import('../../functions/shared/db/ops');
    const { recordSpend } = await import('../../functions/spend/counters');
    const { hourLabel } = await import('../../functions/spend/periods');
    const { cellSortKey, spendPartition, spendShardPk } = await import('../../functions/spend/dimensions');
    const f = await workspace('spend-f', 1);
    const keyId = f.keys[0]!.id;
    const now = Math.floor(Date.now() / 1000);
    const sk = cellSortKey(hourLabel(now), { api_key: keyId, provider: 'openai', model: 'gpt-4o-mini' });
    const cellPk = spendPartition(f.id, 'cell');
    // What this cell held before sharding: the unsharded item, which is shard 0.
    await ops.updateItem('usage', { pk: cellPk, sk }, { set: { ttl: now + 86_400 }, add: { requests: 3, total_tokens: 30, cost_nano_usd: 7000 } });
    // 40 requests of one cell, one after another (each its own write, as on Lambda on demand).
    for (let i = 0; i < 40; i++)
      await recordSpend(spendRecord(f.id, keyId, { id: `log_shard_${i}`, model: 'gpt-4o-mini', cost_usd: 0.000002, created_at: now }));
    const shards = await Promise.all(
      Array.from({ length: 32 }, (_, shard) => ops.getItem<{ requests?: number }>('usage', { pk: spendShardPk(cellPk, shard), sk }, true)),
    );
    const perShard = shards.map((item) => Number(item?.requests ?? 0));
    expect(perShard.reduce((x, y) => x + y, 0)).toBe(43);
    // 40 writes at random over 32 shards: all on one shard has a chance of 32^-39.
    expect(perShard.filter((n) => n > 0).length).toBeGreaterThan(5);
    const res = await spend(f.keys[0]!.secret, `group_by=model&from=${now - 3600}&to=${now + 3600}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.totals).toMatchObject({ requests: 43, total_tokens: 30 + 40 * 2, cost_usd: 0.000087 });
  });
});

describe('a report over too many counters', () => {
  it('is refused with a 400 instead of reading on (the bound lowered here to 3 counters)', async () => {
    const { spendReport } = await import('../../functions/spend/report');
    const now = Math.floor(Date.now() / 1000);
    const query = {
      dimension: 'model' as const,
      granularity: 'day' as const,
      range: { from: startedAt - 86_400, to: now + 86_400 },
      workspaceIds: [a.id],
      nowSeconds: now,
    };
    await expect(spendReport({ ...query, maxCounters: 3 })).rejects.toMatchObject({ status: 400, param: 'from', code: 'report_too_large' });
    const whole = await spendReport(query);
    expect(whole.totals.requests).toBe(sentA);
  });
});

describe('the examples of docs/usage.md', () => {
  it('are valid requests (the workspace slug is one of this organisation)', async () => {
    const usage = readFileSync(new URL('../../docs/usage.md', import.meta.url), 'utf8');
    const start = usage.indexOf('\n## Spend reports');
    expect(start).toBeGreaterThan(0);
    const end = usage.indexOf('\n## ', start + 1);
    const section = usage.slice(start, end < 0 ? undefined : end);
    const queries = [...section.matchAll(/\/v1\/analytics\/spend\?([^"\s]+)"/g)].map((m) => m[1]!.replace('workspace_id=my-team', `workspace_id=${a.slug}`));
    expect(queries.length).toBeGreaterThanOrEqual(4);
    for (const query of queries) {
      const res = await spend(gw.adminKey, query);
      expect(res.status, `${query}: ${res.text}`).toBe(200);
      expect(Object.keys(res.body)).toEqual(['object', 'group_by', 'granularity', 'from', 'to', 'organisation_id', 'workspace_id', 'data', 'totals']);
    }
  });
});

describe('bad parameters', () => {
  it.each([
    ['group_by=user', 'group_by'],
    ['group_by=metadata.', 'group_by'],
    ['granularity=week', 'granularity'],
    ['from=yesterday', 'from'],
    ['to=2026-02-30', 'to'],
    ['from=2026-11-02&to=2026-11-01', 'to'],
    ['granularity=hour&from=2026-01-01&to=2026-03-01', 'from'],
    ['granularity=day&from=2024-01-01&to=2026-01-01', 'from'],
  ])('%s is a 400 naming %s', async (query, param) => {
    const res = await spend(a.keys[0]!.secret, query);
    expect(res.status, res.text).toBe(400);
    expect(errorOf(res)).toMatchObject({ type: 'invalid_request_error', param });
  });

  it('without parameters: the current month so far, per day, by workspace', async () => {
    const res = await spend(a.keys[0]!.secret, '');
    expect(res.status, res.text).toBe(200);
    const now = new Date();
    expect(res.body).toMatchObject({
      group_by: 'workspace',
      granularity: 'day',
      from: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString().replace('.000Z', 'Z'),
    });
  });

  it('without a key is a 401', async () => {
    expect((await call(gw, 'GET', '/v1/analytics/spend', { key: null })).status).toBe(401);
  });
});
