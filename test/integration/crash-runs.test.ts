import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { startChildGateway } from '../support/child-gateway';
import { api, isTerminalStatus, runWhenTerminal, streamedRunInProgress, type GatewayAt } from '../support/runs';

// The whole local runtime killed (SIGKILL of node AND of DynamoDB Local's JVM) while runs
// are queued, running in the workflow and streamed, then started again on the same data
// folder: every run reaches a terminal state within 60 s (the durable local queue resends
// what was queued, the local Step Functions re-runs what was running, the run reconciler
// ends what nothing executes any more), a cancel of a run ends it `cancelled` within
// seconds, and every thread takes new messages and runs.

const dir = mkdtempSync(join(tmpdir(), 'crash-runs-'));
const GATEWAY_ENV = {
  GATEWAY_DATA_DIR: dir,
  // Its own DynamoDB Local (files under the data folder) and KMS key, its own admin key.
  GATEWAY_DYNAMODB_ENDPOINT: '',
  GATEWAY_KMS_ENDPOINT: '',
  GATEWAY_ADMIN_KEY: '',
  RUN_EXECUTOR_LEASE_MS: '3000',
  GATEWAY_RUN_RECONCILE_INTERVAL_MS: '1000',
  GATEWAY_WORKFLOW_MAX_WAIT_MS: '100',
  AUTH_CACHE_TTL_MS: '0',
};

/** Answers nothing for two minutes (the run it serves is mid-call whenever we look). */
let slowFake: FakeServer;
/** Hangs until the crash, answers at once after it. */
let fastFake: FakeServer;
let child: Awaited<ReturnType<typeof startChildGateway>> | undefined;

const start = async (): Promise<GatewayAt> => {
  child = await startChildGateway({ adminKey: '', kmsEndpoint: '' }, GATEWAY_ENV);
  return { url: child.url, adminKey: child.adminKey };
};

/** The gateway's node process and its DynamoDB Local JVM, killed at once with SIGKILL. */
async function crash(): Promise<void> {
  const pid = child!.pid;
  const jvms = execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(pid)], { encoding: 'utf8' })
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter(([, comm]) => comm === 'java')
    .map(([p]) => Number(p));
  expect(jvms).toHaveLength(1);
  process.kill(pid, 'SIGKILL');
  process.kill(jvms[0]!, 'SIGKILL');
  await child!.stop(); // resolves once the process has exited
  child = undefined;
}

beforeAll(async () => {
  [slowFake, fastFake] = await Promise.all([startOpenAIFake(), startOpenAIFake()]);
  slowFake.setBehaviour({ latencyMs: 120_000 });
});
afterAll(async () => {
  await child?.stop();
  await Promise.all([slowFake?.close(), fastFake?.close()]);
  rmSync(dir, { recursive: true, force: true });
});

describe('a crash of the whole local runtime during runs', () => {
  it('leaves no run stranded: all terminal within 60 s, cancel works, threads usable', { timeout: 240_000 }, async () => {
    let gw = await start();
    for (const [slug, fake] of [
      ['crash-slow', slowFake],
      ['crash-fast', fastFake],
    ] as const) {
      const created = await api(gw, 'POST', '/v1/providers', { slug, provider: 'openai', api_key: 'sk-managed', custom_host: `${fake.url}/v1` });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
    }
    const assistant = async (provider: string) =>
      (await api(gw, 'POST', '/v1/assistants', { model: 'gpt-4o-mini', instructions: 'Be brief.' }, { 'x-gateway-provider': provider })).body.id as string;
    const slow = await assistant('@crash-slow');
    const fast = await assistant('@crash-fast');
    const thread = async () => (await api(gw, 'POST', '/v1/threads', { messages: [{ role: 'user', content: 'Hello' }] })).body.id as string;
    const run = async (threadId: string, assistantId: string) => {
      const created = await api(gw, 'POST', `/v1/threads/${threadId}/runs`, { assistant_id: assistantId });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      return { threadId, runId: created.body.id as string };
    };
    const inProgress = async (r: { threadId: string; runId: string }) => {
      for (;;) {
        const now = await api(gw, 'GET', `/v1/threads/${r.threadId}/runs/${r.runId}`);
        if (now.body.status === 'in_progress') return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };

    fastFake.setBehaviour({ latencyMs: 120_000 });
    // Running in the workflow (mid model call): one that the restart will cancel, one that must finish.
    const toCancel = await run(await thread(), slow);
    const running = await run(await thread(), fast);
    await Promise.all([inProgress(toCancel), inProgress(running)]);
    // Streamed, mid model call: its executor (this process) dies with it.
    const streamedThread = await thread();
    const streamed = { threadId: streamedThread, runId: (await streamedRunInProgress(gw, streamedThread, fast)).runId };
    // Queued just before the crash.
    const threads = await Promise.all([thread(), thread(), thread()]);
    const queued = await Promise.all(threads.map((t) => run(t, fast)));
    await crash();

    fastFake.setBehaviour({ latencyMs: undefined });
    gw = await start();
    const restarted = Date.now();

    // A cancel of a run whose execution the restart re-ran ends it cancelled within seconds.
    const cancel = await api(gw, 'POST', `/v1/threads/${toCancel.threadId}/runs/${toCancel.runId}/cancel`);
    expect(cancel.status, `${JSON.stringify(cancel.body)}\n${child!.output().slice(-4000)}`).toBe(200);
    expect((await runWhenTerminal(gw, toCancel.threadId, toCancel.runId, 5_000)).status).toBe('cancelled');

    const others = [running, streamed, ...queued];
    const finals = await Promise.all(others.map((r) => runWhenTerminal(gw, r.threadId, r.runId, 60_000)));
    const elapsed = Date.now() - restarted;
    expect(
      finals.map((f) => f.status),
      JSON.stringify(finals.map((f) => ({ id: f.id, status: f.status, last_error: f.last_error }))),
    ).toEqual(finals.map((f) => (isTerminalStatus(f.status) ? f.status : 'not terminal')));
    expect(elapsed).toBeLessThan(60_000);
    // The workflow runs were resumed (re-run, or sent again from the queue) and completed.
    expect(finals[0]!.status).toBe('completed');
    for (const f of finals.slice(2)) expect(f.status).toBe('completed');
    // The streamed run had no executor left: failed, saying why.
    expect(finals[1]).toMatchObject({ status: 'failed', last_error: { code: 'server_error' } });

    // Every thread takes new messages and runs.
    for (const r of [toCancel, ...others]) {
      const message = await api(gw, 'POST', `/v1/threads/${r.threadId}/messages`, { role: 'user', content: 'And now?' });
      expect(message.status, JSON.stringify(message.body)).toBe(200);
      const next = await run(r.threadId, fast);
      expect((await runWhenTerminal(gw, next.threadId, next.runId, 30_000)).status).toBe('completed');
    }
  });
});
