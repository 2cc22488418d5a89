import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { startChildGateway } from '../support/child-gateway';
import { call, startTestGateway } from '../support/gateway';
import { api, runWhenTerminal, streamedRunInProgress } from '../support/runs';

// The run reconciler (functions/assistants/workflow/recovery.ts) against real executors:
// streamed runs executed by a second gateway process (sharing this file's tables) that is
// killed with SIGKILL mid-call, and by this one, live. The reconciler's passes are the
// `run-reconcile` worker's handler, called here when the test wants a pass (the local
// runtime's own timer, and the whole-runtime crash, are in crash-runs.test.ts).

const LEASE_MS = 2000;
let gw: LocalGateway;
let fake: FakeServer;
let assistantId: string;
let reconcile: () => Promise<Record<string, number>>;

beforeAll(async () => {
  fake = await startOpenAIFake();
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0', RUN_EXECUTOR_LEASE_MS: String(LEASE_MS) } });
  const provider = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'rec-openai', provider: 'openai', api_key: 'sk-managed', custom_host: `${fake.url}/v1` },
  });
  expect(provider.status, provider.text).toBe(200);
  const assistant = await call(gw, 'POST', '/v1/assistants', {
    body: { model: 'gpt-4o-mini', instructions: 'Be brief.' },
    headers: { 'x-gateway-provider': '@rec-openai' },
  });
  expect(assistant.status, assistant.text).toBe(200);
  assistantId = assistant.body.id;
  ({ handler: reconcile } = (await import('../../functions/workers/run-reconcile')) as { handler: () => Promise<Record<string, number>> });
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});
afterEach(() => fake.reset());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const newThread = async () => (await api(gw, 'POST', '/v1/threads', { messages: [{ role: 'user', content: 'Hello' }] })).body.id as string;

/** Streamed runs started through a second gateway process, which is then killed mid-call. */
async function strandedStreamedRuns(count: number): Promise<{ runs: Array<{ threadId: string; runId: string }>; killedAt: number }> {
  fake.setBehaviour({ latencyMs: 60_000 });
  const child = await startChildGateway(gw, { RUN_EXECUTOR_LEASE_MS: String(LEASE_MS) });
  try {
    const runs: Array<{ threadId: string; runId: string }> = [];
    for (let i = 0; i < count; i++) {
      const threadId = await newThread();
      runs.push({ threadId, runId: (await streamedRunInProgress({ url: child.url, adminKey: gw.adminKey }, threadId, assistantId)).runId });
    }
    await sleep(300); // the model calls are under way
    process.kill(child.pid, 'SIGKILL');
    return { runs, killedAt: Date.now() };
  } finally {
    await child.stop();
  }
}

async function strandedStreamedRun(): Promise<{ threadId: string; runId: string; killedAt: number }> {
  const { runs, killedAt } = await strandedStreamedRuns(1);
  return { ...runs[0]!, killedAt };
}

describe('run reconciler', () => {
  it('fails a streamed run whose process died, once its lease lapsed, and frees its thread', async () => {
    const { threadId, runId, killedAt } = await strandedStreamedRun();
    fake.setBehaviour({ latencyMs: undefined });
    // Before the lease lapses, the run is held: a pass leaves it alone.
    expect((await api(gw, 'GET', `/v1/threads/${threadId}/runs/${runId}`)).body.status).toBe('in_progress');
    await reconcile();
    if (Date.now() - killedAt < LEASE_MS - 500) expect((await api(gw, 'GET', `/v1/threads/${threadId}/runs/${runId}`)).body.status).toBe('in_progress');
    // Held, the thread refuses new work.
    expect((await api(gw, 'POST', `/v1/threads/${threadId}/messages`, { role: 'user', content: 'more' })).status).toBe(400);

    await sleep(Math.max(0, killedAt + LEASE_MS + 200 - Date.now()));
    const pass = await reconcile();
    expect(pass.failed).toBeGreaterThanOrEqual(1);
    const run = (await api(gw, 'GET', `/v1/threads/${threadId}/runs/${runId}`)).body;
    expect(run).toMatchObject({ status: 'failed', last_error: { code: 'server_error' }, expires_at: null });
    expect(run.last_error.message).toMatch(/process executing it ended/);
    // Its open message and step are closed, not left in progress.
    const steps = (await api(gw, 'GET', `/v1/threads/${threadId}/runs/${runId}/steps`)).body.data as Array<{ status: string }>;
    expect(steps.every((s) => s.status !== 'in_progress')).toBe(true);
    const messages = (await api(gw, 'GET', `/v1/threads/${threadId}/messages`)).body.data as Array<{ status: string }>;
    expect(messages.every((m) => m.status !== 'in_progress')).toBe(true);
    // The thread takes new messages and runs again.
    expect((await api(gw, 'POST', `/v1/threads/${threadId}/messages`, { role: 'user', content: 'again' })).status).toBe(200);
    const next = await api(gw, 'POST', `/v1/threads/${threadId}/runs`, { assistant_id: assistantId });
    expect(next.status).toBe(200);
    expect((await runWhenTerminal(gw, threadId, next.body.id, 20_000)).status).toBe('completed');
  });

  it('frees a thread held by a stranded run as soon as a message or a run asks for it, before any pass', async () => {
    const { runs, killedAt } = await strandedStreamedRuns(2);
    fake.setBehaviour({ latencyMs: undefined });
    await sleep(Math.max(0, killedAt + LEASE_MS + 200 - Date.now()));
    const [forMessage, forRun] = runs as [{ threadId: string; runId: string }, { threadId: string; runId: string }];
    expect((await api(gw, 'POST', `/v1/threads/${forMessage.threadId}/messages`, { role: 'user', content: 'again' })).status).toBe(200);
    const next = await api(gw, 'POST', `/v1/threads/${forRun.threadId}/runs`, { assistant_id: assistantId });
    expect(next.status, JSON.stringify(next.body)).toBe(200);
    for (const r of runs) {
      expect((await api(gw, 'GET', `/v1/threads/${r.threadId}/runs/${r.runId}`)).body).toMatchObject({
        status: 'failed',
        last_error: { code: 'server_error' },
      });
    }
    expect((await runWhenTerminal(gw, forRun.threadId, next.body.id, 20_000)).status).toBe('completed');
  });

  it('cancels at once a streamed run whose executor is gone (lapsed lease)', async () => {
    const { threadId, runId, killedAt } = await strandedStreamedRun();
    fake.setBehaviour({ latencyMs: undefined });
    await sleep(Math.max(0, killedAt + LEASE_MS + 200 - Date.now()));
    const started = Date.now();
    const cancelled = await api(gw, 'POST', `/v1/threads/${threadId}/runs/${runId}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(3000);
    expect((await api(gw, 'POST', `/v1/threads/${threadId}/messages`, { role: 'user', content: 'again' })).status).toBe(200);
  });

  it('a cancel that finds the executor still holding its lease ends cancelled once the lease lapses', async () => {
    const { threadId, runId, killedAt } = await strandedStreamedRun();
    fake.setBehaviour({ latencyMs: undefined });
    const sentAt = Date.now();
    const cancelling = await api(gw, 'POST', `/v1/threads/${threadId}/runs/${runId}/cancel`);
    // The lease, renewed every second until the kill, lapses within the last second before
    // killedAt + LEASE_MS: held until then, the run waits for the reconciler (the usual case);
    // a machine slow enough to cancel only after that sees it cancelled at once.
    if (Date.now() < killedAt + LEASE_MS - 1000) expect(cancelling.body.status).toBe('cancelling');
    if (sentAt > killedAt + LEASE_MS) expect(cancelling.body.status).toBe('cancelled');
    expect(['cancelling', 'cancelled']).toContain(cancelling.body.status);
    await sleep(Math.max(0, killedAt + LEASE_MS + 200 - Date.now()));
    if (cancelling.body.status === 'cancelling') expect((await reconcile()).cancelled).toBeGreaterThanOrEqual(1);
    expect((await api(gw, 'GET', `/v1/threads/${threadId}/runs/${runId}`)).body.status).toBe('cancelled');
  });

  it('never ends a run whose executor is alive, however often it passes (a call longer than the lease)', async () => {
    const threadId = await newThread();
    fake.setBehaviour({ latencyMs: 3 * LEASE_MS });
    const { runId } = await streamedRunInProgress(gw, threadId, assistantId);
    const passes: Array<Record<string, number>> = [];
    let finished = false;
    const passing = (async () => {
      while (!finished) {
        passes.push(await reconcile());
        await sleep(100);
      }
    })();
    const run = await runWhenTerminal(gw, threadId, runId, 30_000);
    finished = true;
    await passing;
    expect(run.status).toBe('completed');
    expect(passes.length).toBeGreaterThan(10);
    expect(passes.every((p) => p.failed === 0 && p.cancelled === 0)).toBe(true);
  });

  it('leaves a workflow run alone while its execution runs', async () => {
    const threadId = await newThread();
    fake.setBehaviour({ latencyMs: 1500 });
    const created = await api(gw, 'POST', `/v1/threads/${threadId}/runs`, { assistant_id: assistantId });
    expect(created.status).toBe(200);
    const passes: Array<Record<string, number>> = [];
    let run = created.body;
    while (run.status === 'queued' || run.status === 'in_progress') {
      passes.push(await reconcile());
      run = (await api(gw, 'GET', `/v1/threads/${threadId}/runs/${run.id}`)).body;
    }
    expect(run.status).toBe('completed');
    expect(passes.every((p) => p.failed === 0)).toBe(true);
  });

  it('never shows a run past expires_at as active: read, listed or swept, it is expired and its thread is free', async () => {
    // Runs whose queue message is lost (the hook that would send it does nothing), and whose
    // expires_at has passed (moved into the past: the test does not wait ten minutes).
    const lifecycle = await import('../../functions/assistants/workflow/lifecycle');
    const { updateItem } = await import('../../functions/shared/db/ops');
    const { runKey } = await import('../../functions/assistants/store/db');
    const restore = lifecycle.setLifecycleHooks({ startRun: async () => undefined });
    const lapsed = async () => {
      const threadId = await newThread();
      const created = await api(gw, 'POST', `/v1/threads/${threadId}/runs`, { assistant_id: assistantId });
      expect(created.body.status).toBe('queued');
      await updateItem('threads', runKey(gw.workspaceId, threadId, created.body.id), { set: { expires_at: created.body.created_at - 1 } });
      return { threadId, runId: created.body.id as string };
    };
    try {
      const [read, listed, swept] = [await lapsed(), await lapsed(), await lapsed()];
      const got = await api(gw, 'GET', `/v1/threads/${read.threadId}/runs/${read.runId}`);
      expect(got.body).toMatchObject({ id: read.runId, status: 'expired', expires_at: null });
      const list = await api(gw, 'GET', `/v1/threads/${listed.threadId}/runs`);
      expect(list.body.data).toEqual([expect.objectContaining({ id: listed.runId, status: 'expired' })]);
      expect((await reconcile()).expired).toBeGreaterThanOrEqual(1);
      expect((await api(gw, 'GET', `/v1/threads/${swept.threadId}/runs/${swept.runId}`)).body.status).toBe('expired');
      for (const r of [read, listed, swept]) {
        expect((await api(gw, 'POST', `/v1/threads/${r.threadId}/messages`, { role: 'user', content: 'again' })).status).toBe(200);
      }
    } finally {
      restore();
    }
  });

  it('expires, without calling the model, a queued run whose message is delivered after its expires_at (a late replay)', async () => {
    const lifecycle = await import('../../functions/assistants/workflow/lifecycle');
    const { updateItem } = await import('../../functions/shared/db/ops');
    const { runKey } = await import('../../functions/assistants/store/db');
    const { getRun } = await import('../../functions/assistants/store/runs');
    const restore = lifecycle.setLifecycleHooks({ startRun: async () => undefined });
    let threadId: string;
    let runId: string;
    try {
      threadId = await newThread();
      const created = await api(gw, 'POST', `/v1/threads/${threadId}/runs`, { assistant_id: assistantId });
      runId = created.body.id;
      await updateItem('threads', runKey(gw.workspaceId, threadId, runId), { set: { expires_at: created.body.created_at - 1 } });
    } finally {
      restore();
    }
    // The queue delivers it now (as the journal's replay would after a long outage).
    await lifecycle.workflowHooks.startRun((await getRun({ workspaceId: gw.workspaceId, threadId, runId }))!);
    const deadline = Date.now() + 10_000;
    while (gw.stepFunctions.running() === 0 && Date.now() < deadline) await sleep(20);
    while (gw.stepFunctions.running() > 0 && Date.now() < deadline) await sleep(20);
    const { status } = await runWhenTerminal(gw, threadId, runId, 1000);
    expect(status).toBe('expired');
    expect(fake.count('/chat/completions')).toBe(0);
  });
});
