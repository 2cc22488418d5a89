import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, startTestGateway } from '../support/gateway';
import { productionBundlesCopy } from '../support/production-bundles';

// The local runtime's multi-concurrency mode (issue 24): the production bundles in three
// worker threads, each taking many invocations at once, as the Node.js runtime of Lambda
// Managed Instances runs a function. Every module-level cache, client, counter and buffer
// (auth and control caches, rate-limit reservations, the grouped request-log writer,
// metrics) is shared by the concurrent requests of a thread; nothing may be lost or
// handed to the wrong request.

const THREADS = 3;
let bundlesDir: string;
let gw: LocalGateway | undefined;
let fake: FakeServer;
const keys: Array<{ id: string; secret: string; limit: number }> = [];
let guardedConfig: string;
let adminKey: string;

const startGateway = (extra: Record<string, string> = {}) =>
  startTestGateway({
    workerThreads: THREADS,
    functionBundlesDir: bundlesDir,
    ...(adminKey ? { adminKey } : {}),
    // Request-log records wait for company before they are written (grouped writes), so
    // many are pending in each thread at any moment.
    env: { REQUEST_LOG_BATCH_WAIT_MS: '50', ...extra },
  });

beforeAll(async () => {
  bundlesDir = await productionBundlesCopy();
  // Every answer waits, so requests overlap inside each thread.
  fake = await startOpenAIFake({ latencyMs: 150 });
  gw = await startGateway();
  adminKey = gw.adminKey;
  await call(gw, 'POST', '/v1/providers', { body: { slug: 'oa', provider: 'openai', api_key: 'sk-x', custom_host: `${fake.url}/v1` } });
  const deny = await call(gw, 'POST', '/v1/guardrails', {
    body: { name: 'No emails in', checks: [{ id: 'default.piiRegex', parameters: { categories: ['email'] } }], actions: { onFail: 'block', deny: true } },
  });
  expect(deny.status).toBe(200);
  const config = await call(gw, 'POST', '/v1/configs', {
    body: { name: 'guarded and cached', config: { provider: '@oa', input_guardrails: [deny.body.id], cache: { mode: 'simple', max_age: 600 } } },
  });
  expect(config.status).toBe(200);
  guardedConfig = config.body.id;
  // Four keys, each under its own requests-per-minute policy with a different limit.
  for (const limit of [5, 8, 11, 1000]) {
    const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: `mc-${limit}`, scopes: ['gateway'] } });
    const policy = await call(gw, 'POST', '/v1/policies/rate-limits', {
      body: { name: `mc ${limit}/min`, conditions: [{ key: 'api_key', value: key.body.id }], type: 'requests', unit: 'rpm', value: limit },
    });
    expect(policy.status).toBe(200);
    keys.push({ id: key.body.id, secret: key.body.secret, limit });
  }
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await fake?.close();
  if (bundlesDir) rmSync(bundlesDir, { recursive: true, force: true });
});

interface Sent {
  trace: string;
  key: (typeof keys)[number];
  prompt: string;
  kind: 'plain' | 'blocked' | 'cached';
  status: number;
  trailer: string | null;
  content?: string;
  cacheStatus: string | null;
}

async function chat(key: (typeof keys)[number], trace: string, prompt: string, kind: Sent['kind']): Promise<Sent> {
  const res = await fetch(`${gw!.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': key.secret, 'x-gateway-config': guardedConfig, 'x-gateway-trace-id': trace },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: prompt }] }),
  });
  const body = (await res.json()) as { choices?: Array<{ message: { content: string } }> };
  return {
    trace,
    key,
    prompt,
    kind,
    status: res.status,
    trailer: res.headers.get('x-gateway-trace-id'),
    ...(body.choices ? { content: body.choices[0]!.message.content } : {}),
    cacheStatus: res.headers.get('x-gateway-cache-status'),
  };
}

/** Request-log records of the admin's workspace by trace id (the logs API, trace_id filter). */
async function logFor(g: LocalGateway, trace: string) {
  const r = await call(g, 'GET', `/v1/logs?trace_id=${encodeURIComponent(trace)}`);
  return (r.body?.data ?? []) as Array<Record<string, any>>;
}

/** Requests the spend counters hold for a key (today and yesterday, in case the hour turns). */
async function requestsCounted(g: LocalGateway, keyId: string): Promise<number> {
  const now = Math.floor(Date.now() / 1000);
  const r = await call(g, 'GET', `/v1/analytics/spend?group_by=api_key&from=${now - 86_400}&to=${now + 3600}`);
  expect(r.status).toBe(200);
  return (r.body.data as Array<{ group: string | null; requests: number }>).filter((row) => row.group === keyId).reduce((n, row) => n + row.requests, 0);
}

describe('multi-concurrency mode: production bundles in worker threads, many invocations per thread', () => {
  it('keeps every request to itself under concurrent load with auth, limits, guardrails, cache and logging on', async () => {
    // Stay inside one rate-limit minute.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 40_000) await new Promise((r) => setTimeout(r, 60_000 - intoMinute + 500));
    const run = `${Date.now()}`;
    const cachedPrompt = `cached question ${run}`;
    // Warm the cache entry first (a MISS that fills it).
    const unlimited = keys.find((k) => k.limit === 1000)!;
    // Fill the cache entry (written after the response): ask until it is served from cache.
    let warm = await chat(unlimited, `mc-${run}-warm-0`, cachedPrompt, 'cached');
    for (let i = 1; i < 100 && warm.cacheStatus !== 'HIT'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      warm = await chat(unlimited, `mc-${run}-warm-${i}`, cachedPrompt, 'cached');
    }
    expect(warm.cacheStatus).toBe('HIT');

    const jobs: Array<Promise<Sent>> = [];
    let n = 0;
    for (const key of keys) {
      // Limited keys: twice their limit of distinct prompts, all at once.
      const count = key.limit === 1000 ? 30 : key.limit * 2;
      for (let i = 0; i < count; i++) {
        const trace = `mc-${run}-${n++}`;
        const kind: Sent['kind'] = key.limit === 1000 ? (['plain', 'blocked', 'cached'] as const)[i % 3]! : 'plain';
        const prompt = kind === 'blocked' ? `mail me at user${n}@example.com` : kind === 'cached' ? cachedPrompt : `question ${trace}`;
        jobs.push(chat(key, trace, prompt, kind));
      }
    }
    const sent = await Promise.all(jobs);

    // The threads all served, each several requests at once.
    const stats = gw!.workerStats!();
    expect(stats).toHaveLength(THREADS);
    for (const s of stats) {
      expect(s.served).toBeGreaterThan(0);
      expect(s.maxInFlight).toBeGreaterThan(1);
    }

    // Rate limits: exactly the limit of each limited key passed, whichever thread served it.
    for (const key of keys.filter((k) => k.limit < 1000)) {
      const mine = sent.filter((s) => s.key === key);
      expect(
        mine.filter((s) => s.status === 200),
        `key limited to ${key.limit}`,
      ).toHaveLength(key.limit);
      expect(mine.filter((s) => s.status === 429)).toHaveLength(key.limit);
    }
    for (const s of sent) {
      // Each response carries its own trace id, and an answer carries its own prompt.
      expect(s.trailer, s.trace).toBe(s.trace);
      if (s.status === 200) expect(s.content, s.trace).toBe(`echo: ${s.prompt}`);
    }
    const unlimitedSent = sent.filter((s) => s.key === unlimited);
    expect(unlimitedSent.filter((s) => s.kind === 'blocked').every((s) => s.status === 446)).toBe(true);
    expect(unlimitedSent.filter((s) => s.kind === 'plain').every((s) => s.status === 200 && s.cacheStatus === 'MISS')).toBe(true);
    expect(unlimitedSent.filter((s) => s.kind === 'cached').every((s) => s.status === 200 && s.cacheStatus === 'HIT')).toBe(true);

    // The request log: one record per request, with that request's key, status and cache
    // outcome (records are written after the response, grouped; poll until all are there).
    const deadline = Date.now() + 15_000;
    const records = new Map<string, Record<string, any>>();
    while (records.size < sent.length && Date.now() < deadline) {
      for (const s of sent.filter((x) => !records.has(x.trace))) {
        const found = await logFor(gw!, s.trace);
        if (found.length) {
          expect(found, s.trace).toHaveLength(1);
          records.set(s.trace, found[0]!);
        }
      }
    }
    expect(records.size).toBe(sent.length);
    for (const s of sent) {
      const r = records.get(s.trace)!;
      expect(r.trace_id).toBe(s.trace);
      expect(r.status, s.trace).toBe(s.status);
      expect(r.api_key_id, s.trace).toBe(s.key.id);
      if (s.status === 200) expect(r.cache_status, s.trace).toBe(s.cacheStatus);
    }
  }, 120_000);

  it('flushes every pending request-log record and held spend counter when the runtime shuts down', async () => {
    const unlimited = keys.find((k) => k.limit === 1000)!;
    const spentBefore = await requestsCounted(gw!, unlimited.id);
    // Records wait 5 s for company: at shutdown they are still queued in the threads.
    await gw!.stop();
    gw = await startGateway({ REQUEST_LOG_BATCH_WAIT_MS: '5000' });
    const run = `${Date.now()}`;
    // The provider key comes with the request (the restarted runtime has a new local KMS,
    // so the managed provider's stored key cannot be decrypted here).
    const sent = await Promise.all(
      Array.from({ length: 24 }, async (_, i) => {
        const trace = `mc-stop-${run}-${i}`;
        const res = await fetch(`${gw!.url}/v1/chat/completions`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-gateway-api-key': unlimited.secret,
            'x-gateway-provider': 'openai',
            'x-gateway-custom-host': `${fake.url}/v1`,
            authorization: 'Bearer sk-x',
            'x-gateway-trace-id': trace,
          },
          body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `stop question ${run} ${i}` }] }),
        });
        await res.arrayBuffer();
        return { trace, status: res.status };
      }),
    );
    expect(sent.every((s) => s.status === 200)).toBe(true);
    // Nothing is written yet: the grouping wait has not elapsed.
    expect(await logFor(gw, sent[0]!.trace)).toHaveLength(0);
    await gw.stop();
    // A fresh runtime on the same tables finds every record.
    gw = await startTestGateway({ adminKey });
    for (const s of sent) {
      const found = await logFor(gw, s.trace);
      expect(found, s.trace).toHaveLength(1);
      expect(found[0]!.status).toBe(200);
    }
    // The spend counters the threads held for their concurrent requests were written too.
    expect(await requestsCounted(gw, unlimited.id)).toBe(spentBefore + sent.length);
  }, 120_000);

  it('refuses to start when a thread cannot load the handlers, and stops what it had started', async () => {
    await gw!.stop();
    gw = undefined;
    const empty = mkdtempSync(join(tmpdir(), 'gateway-no-bundles-'));
    try {
      await expect(startTestGateway({ workerThreads: 2, functionBundlesDir: empty, adminKey })).rejects.toThrow(/index\.mjs/);
      // The runtime stopped what it had started: a new one can start in this process.
      gw = await startTestGateway({ adminKey });
      expect((await call(gw, 'GET', '/v1/api-keys')).status).toBe(200);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  }, 60_000);
});
