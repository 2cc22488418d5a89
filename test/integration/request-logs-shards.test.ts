import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, startTestGateway } from '../support/gateway';

// Request logs written over several write shards (REQUEST_LOG_SHARDS=3 here) beside records
// of the unsharded layout (written before sharding): listing, filters and paging read every
// shard and merge them by id (time), newest first, without skipping or repeating a record.

const SHARDS = 3;
let gw: LocalGateway;
let fake: FakeServer;
let key: string;
let workspaceId: string;
let keyId: string;
type Ops = typeof import('../../functions/shared/db/ops');
let ops: Ops;
let keys: typeof import('../../functions/shared/db/log-keys');
let newId: (prefix: string) => string;

const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const env = `prod-${run}`;
const trace = `shards-${run}`;
const PROVIDER_KEY = 'sk-logs-shards-0123456789';

beforeAll(async () => {
  fake = await startOpenAIFake();
  gw = await startTestGateway({ env: { REQUEST_LOG_SHARDS: String(SHARDS) } });
  ops = await import('../../functions/shared/db/ops');
  keys = await import('../../functions/shared/db/log-keys');
  newId = (await import('../../functions/shared/ids')).newId;
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: `Shards ${run}` } });
  expect(ws.status, ws.text).toBe(200);
  workspaceId = ws.body.id;
  const made = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'shards', workspace_id: workspaceId, scopes: ['admin', 'gateway'] } });
  expect(made.status, made.text).toBe(200);
  key = made.body.secret;
  keyId = made.body.id;
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

const now = () => Math.floor(Date.now() / 1000);

/** A record as the gateway stored it before sharding: unsharded log, trace and metadata partitions. */
async function putLegacy(user: string, withTrace: boolean): Promise<string> {
  const id = newId('log_');
  await ops.putItem('logs', {
    pk: `WS#${workspaceId}#LOG`,
    sk: id,
    ...(withTrace ? { gsi1pk: `WS#${workspaceId}#TRACE#${trace}`, gsi1sk: id } : {}),
    meta_environment: `WS#${workspaceId}#${env}`,
    meta_user: `WS#${workspaceId}#${user}`,
    ttl: now() + 3600,
    object: 'request_log',
    id,
    trace_id: withTrace ? trace : id,
    workspace_id: workspaceId,
    api_key_id: 'legacy-key',
    status: 200,
    metadata: { _environment: env, _user: user },
    created_at: now(),
  });
  return id;
}

/** A chat completion through the gateway with this metadata (its record is written after the answer). */
async function chat(user: string, withTrace: boolean): Promise<void> {
  const res = await call(gw, 'POST', '/v1/chat/completions', {
    key,
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
    headers: {
      'x-gateway-provider': 'openai',
      'x-gateway-custom-host': `${fake.url}/v1`,
      authorization: `Bearer ${PROVIDER_KEY}`,
      'x-gateway-metadata': JSON.stringify({ _environment: env, _user: user }),
      ...(withTrace ? { 'x-gateway-trace-id': trace } : {}),
    },
  });
  expect(res.status, res.text).toBe(200);
}

type Listed = { id: string; trace_id: string; api_key_id: string; metadata: Record<string, string> };
const list = (query: string) =>
  call<{ data: Listed[]; has_more: boolean; first_id: string | null; last_id: string | null }>(gw, 'GET', `/v1/logs?${query}`, { key });

/** Every id of a filtered list, page by page with `after` (in list order); asserts no id comes twice. */
async function pageForward(query: string, limit: number): Promise<string[]> {
  const seen: string[] = [];
  let after: string | undefined;
  for (let page = 0; page < 100; page++) {
    const res = await list(`${query}&limit=${limit}${after ? `&after=${after}` : ''}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.length).toBeLessThanOrEqual(limit);
    seen.push(...res.body.data.map((r) => r.id));
    if (!res.body.has_more) break;
    expect(res.body.data).toHaveLength(limit);
    after = res.body.last_id!;
  }
  expect(new Set(seen).size).toBe(seen.length);
  return seen;
}

/** The same list read from its end with `before` only: pages come back in list order, nearest the cursor. */
async function pageBackward(query: string, limit: number, from: string): Promise<string[]> {
  const pages: string[][] = [];
  let before = from;
  for (let page = 0; page < 100; page++) {
    const res = await list(`${query}&limit=${limit}&before=${before}`);
    expect(res.status, res.text).toBe(200);
    if (res.body.data.length) pages.unshift(res.body.data.map((r) => r.id));
    if (!res.body.has_more) break;
    before = res.body.first_id!;
  }
  return pages.flat();
}

const byIdDesc = (a: string, b: string) => (a < b ? 1 : a > b ? -1 : 0);

describe('request logs over write shards', () => {
  const legacy: string[] = [];
  let all: Listed[] = [];

  beforeAll(async () => {
    // Older records in the unsharded layout, then new ones through the gateway.
    for (let i = 0; i < 4; i++) legacy.push(await putLegacy(`u${i % 2}-${run}`, i % 2 === 0));
    for (let round = 0; round < 4; round++) await Promise.all(Array.from({ length: 6 }, (_, i) => chat(`u${i % 2}-${run}`, i % 3 === 0)));
    for (let i = 0; i < 100; i++) {
      const res = await list('limit=100');
      if (res.body.data.length >= 28) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    all = (await list('limit=100')).body.data;
  }, 120_000);

  it('writes every key of a record to the shard its id names, so each shard holds some of them', async () => {
    expect(all).toHaveLength(28);
    const counts = await Promise.all(
      Array.from({ length: SHARDS }, async (_, shard) => (await ops.queryAll('logs', keys.logShardPartition(workspaceId, shard), 'log_')).length),
    );
    expect(counts.reduce((a, b) => a + b, 0)).toBe(24);
    for (const count of counts) expect(count).toBeGreaterThan(0);
    const sharded = all.find((r) => !legacy.includes(r.id) && r.trace_id === trace)!;
    const item = await ops.getItem<Record<string, string>>('logs', { pk: keys.logPartition(workspaceId, sharded.id), sk: sharded.id });
    const shard = keys.shardOf(sharded.id, SHARDS);
    expect(item).toMatchObject({
      pk: `WS#${workspaceId}#LOG#${shard}`,
      gsi1pk: `WS#${workspaceId}#TRACE#${trace}#${shard}`,
      meta_environment: `WS#${workspaceId}#${env}#${shard}`,
    });
  });

  it('lists newest first with the legacy records in their place, page by page both ways and in ascending order', async () => {
    const ids = all.map((r) => r.id);
    expect(ids).toEqual([...ids].sort(byIdDesc));
    expect(ids.slice(-4)).toEqual([...legacy].reverse());
    expect(await pageForward('order=desc', 5)).toEqual(ids);
    expect(await pageBackward('order=desc', 5, ids.at(-1)!)).toEqual(ids.slice(0, -1));
    expect(await pageForward('order=asc', 7)).toEqual([...ids].reverse());
    for (const r of all) {
      const got = await call(gw, 'GET', `/v1/logs/${r.id}`, { key });
      expect(got.status, got.text).toBe(200);
      expect(got.body.id).toBe(r.id);
      expect(Object.keys(got.body).filter((k) => k.startsWith('meta_') || k === 'pk' || k === 'gsi1pk')).toEqual([]);
    }
  }, 60_000);

  it('filters by metadata, trace id and key across shards and pages them exactly', async () => {
    const expected = (keep: (r: Listed) => boolean) => all.filter(keep).map((r) => r.id);
    const user0 = `u0-${run}`;
    expect(await pageForward(`metadata._environment=${env}`, 4)).toEqual(expected(() => true));
    expect(await pageForward(`metadata._user=${user0}`, 3)).toEqual(expected((r) => r.metadata._user === user0));
    expect(await pageForward(`metadata._user=${user0}&metadata._environment=${env}`, 3)).toEqual(expected((r) => r.metadata._user === user0));
    const traced = expected((r) => r.trace_id === trace);
    expect(traced.length).toBe(2 + 8);
    expect(await pageForward(`trace_id=${trace}`, 3)).toEqual(traced);
    expect(await pageBackward(`trace_id=${trace}`, 3, traced.at(-1)!)).toEqual(traced.slice(0, -1));
    expect(await pageForward(`api_key_id=${keyId}`, 6)).toEqual(expected((r) => r.api_key_id === keyId));
    expect(await pageForward('api_key_id=legacy-key', 2)).toEqual([...legacy].reverse());
    // A value whose unsharded key equals another value's sharded one (`<env>#1` vs `<env>` in shard 1) is not mixed in.
    expect(await pageForward(`metadata._environment=${env}%231`, 5)).toEqual([]);
  }, 60_000);

  it('pages with `after` without skipping or repeating a record while new records are written between pages', async () => {
    const before = (await list('limit=100')).body.data.map((r) => r.id);
    const seen: string[] = [];
    let after: string | undefined;
    const writes: Promise<void>[] = [];
    for (let page = 0; page < 50; page++) {
      const res = await list(`limit=4${after ? `&after=${after}` : ''}`);
      seen.push(...res.body.data.map((r) => r.id));
      // Newer records land in every shard while the reader pages through older ones.
      writes.push(chat(`u9-${run}`, false), chat(`u9-${run}`, true));
      if (!res.body.has_more) break;
      after = res.body.last_id!;
    }
    await Promise.all(writes);
    // Exactly the records there were when paging began, each once, in order: the newer ones sort before the cursor.
    expect(seen).toEqual(before);
    let newer: Listed[] = [];
    for (let i = 0; i < 100 && newer.length < writes.length; i++) {
      newer = (await list('limit=100')).body.data.filter((r) => r.metadata._user === `u9-${run}`);
      if (newer.length < writes.length) await new Promise((r) => setTimeout(r, 100));
    }
    expect(newer).toHaveLength(writes.length);
    const top = (await list('limit=100')).body.data.map((r) => r.id);
    expect(top.slice(0, writes.length).sort()).toEqual(newer.map((r) => r.id).sort());
  }, 120_000);
});
