import { afterAll, beforeAll, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, startTestGateway } from '../support/gateway';

// One active run per thread under concurrency: racing `POST /threads/{id}/runs` on fresh
// threads admit exactly one run per thread, the others are refused (400, as on OpenAI), and every admitted run
// reaches a terminal state (none is left `queued`).
let gw: LocalGateway;
let fake: FakeServer;

beforeAll(async () => {
  fake = await startOpenAIFake();
  gw = await startTestGateway({ workflowMaxWaitMs: 50, env: { AUTH_CACHE_TTL_MS: '0' } });
  const created = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'race-openai', provider: 'openai', api_key: 'sk-managed', custom_host: `${fake.url}/v1` },
  });
  expect(created.status, created.text).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

const headers = { 'x-gateway-provider': '@race-openai', 'openai-beta': 'assistants=v2' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'expired', 'incomplete']);

it.each([false, true])(
  'admits exactly one of M racing run creates on each of N threads (stream: %s); the rest are 400 and every admitted run ends',
  async (STREAM) => {
    const THREADS = 5;
    const RACERS = 4;
    const assistant = await call(gw, 'POST', '/v1/assistants', { headers, body: { model: 'gpt-4o-mini', instructions: 'Be brief.' } });
    expect(assistant.status, assistant.text).toBe(200);
    const threads = await Promise.all(
      Array.from({ length: THREADS }, () => call(gw, 'POST', '/v1/threads', { headers, body: { messages: [{ role: 'user', content: 'Hello' }] } })),
    );
    const threadIds = threads.map((t) => {
      expect(t.status, t.text).toBe(200);
      return t.body.id as string;
    });

    const outcomes = await Promise.all(
      threadIds.flatMap((threadId) =>
        Array.from({ length: RACERS }, () =>
          call(gw, 'POST', `/v1/threads/${threadId}/runs`, { headers, body: { assistant_id: assistant.body.id, stream: STREAM } }).then((r) => ({
            threadId,
            r,
          })),
        ),
      ),
    );

    for (const threadId of threadIds) {
      const mine = outcomes.filter((o) => o.threadId === threadId);
      const admitted = mine.filter((o) => o.r.status === 200);
      const refused = mine.filter((o) => o.r.status === 400);
      expect(admitted, `thread ${threadId}: ${mine.map((o) => o.r.status).join(',')}`).toHaveLength(1);
      expect(refused).toHaveLength(RACERS - 1);
      for (const o of refused) expect(o.r.body.error.code).toBe('thread_run_active');

      // Only the admitted run exists, and it reaches a terminal state.
      const runId = STREAM ? /"id":"(run_[^"]+)"/.exec(admitted[0]!.r.text)![1]! : (admitted[0]!.r.body.id as string);
      let status = '';
      for (let i = 0; i < 400 && !TERMINAL.has(status); i++) {
        const run = await call(gw, 'GET', `/v1/threads/${threadId}/runs/${runId}`, { headers });
        status = run.body.status;
        if (!TERMINAL.has(status)) await sleep(25);
      }
      expect(status).toBe('completed');
      const runs = await call(gw, 'GET', `/v1/threads/${threadId}/runs`, { headers });
      expect(runs.body.data.map((r: { id: string }) => r.id)).toEqual([runId]);
    }
  },
);

/** A claim on the thread whose run item cannot be read (as a reader racing the claiming transaction sees it). */
async function claimWithoutRun(threadId: string, runId: string, expiresAt: number | undefined) {
  const [{ updateItem }, { threadKey }] = await Promise.all([import('../../functions/shared/db/ops'), import('../../functions/assistants/store/db')]);
  await updateItem('threads', threadKey(gw.workspaceId, threadId), {
    set: { active_run_id: runId, ...(expiresAt === undefined ? {} : { active_run_expires_at: expiresAt }) },
    condition: 'attribute_exists(pk)',
  });
}

it('does not take a live claim for stale because its run cannot be read yet; an expired one is reclaimed', async () => {
  const assistant = await call(gw, 'POST', '/v1/assistants', { headers, body: { model: 'gpt-4o-mini' } });
  const now = Math.floor(Date.now() / 1000);
  const live = await call(gw, 'POST', '/v1/threads', { headers, body: {} });
  await claimWithoutRun(live.body.id, 'run_racing', now + 600);
  const refused = await call(gw, 'POST', `/v1/threads/${live.body.id}/runs`, { headers, body: { assistant_id: assistant.body.id } });
  expect(refused.status, refused.text).toBe(400);
  expect(refused.body.error.code).toBe('thread_run_active');

  const stale = await call(gw, 'POST', '/v1/threads', { headers, body: {} });
  await claimWithoutRun(stale.body.id, 'run_lost', now - 1);
  const admitted = await call(gw, 'POST', `/v1/threads/${stale.body.id}/runs`, { headers, body: { assistant_id: assistant.body.id } });
  expect(admitted.status, admitted.text).toBe(200);
});
