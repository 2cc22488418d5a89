import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { MessageShape, RunShape, RunStepShape } from '../contract/assistants-shapes';
import { startAnthropicFake, startOpenAIFake, type FakeServer } from '../fakes';
import { call, startTestGateway } from '../support/gateway';

// The run engine called directly, as a workflow task would call it: non-streamed runs
// driven in-process through the lifecycle hooks, duplicate and retried deliveries.
let gw: LocalGateway;
let openaiFake: FakeServer;
let claudeFake: FakeServer;
let engine: typeof import('../../functions/assistants/engine/model-step');
let submit: typeof import('../../functions/assistants/engine/submit');
let runs: typeof import('../../functions/assistants/store/runs');
let steps: typeof import('../../functions/assistants/store/steps');
let messages: typeof import('../../functions/assistants/store/messages');
let lifecycle: typeof import('../../functions/assistants/workflow/lifecycle');
type RunRecord = import('../../functions/assistants/store/runs').RunRecord;
const started: RunRecord[] = [];

beforeAll(async () => {
  [openaiFake, claudeFake] = await Promise.all([startOpenAIFake(), startAnthropicFake()]);
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0' } });
  for (const [slug, provider, fake] of [
    ['eng-openai', 'openai', openaiFake],
    ['eng-claude', 'anthropic', claudeFake],
  ] as const) {
    expect((await call(gw, 'POST', '/v1/providers', { body: { slug, provider, api_key: 'sk-managed', custom_host: `${fake.url}/v1` } })).status).toBe(200);
  }
  engine = await import('../../functions/assistants/engine/model-step');
  submit = await import('../../functions/assistants/engine/submit');
  runs = await import('../../functions/assistants/store/runs');
  steps = await import('../../functions/assistants/store/steps');
  messages = await import('../../functions/assistants/store/messages');
  lifecycle = await import('../../functions/assistants/workflow/lifecycle');
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all([openaiFake?.close(), claudeFake?.close()]);
});
let restore: (() => void) | undefined;
afterEach(() => {
  restore?.();
  restore = undefined;
  started.length = 0;
  openaiFake.reset();
  claudeFake.reset();
});

const client = (provider: string) =>
  new OpenAI({ baseURL: gw.baseUrl, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': provider } });
const weather = { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } } };

/** Hooks that only remember the queued run: the test delivers it to the engine itself. */
function captureStarts() {
  restore = lifecycle.setLifecycleHooks({ startRun: async (r) => void started.push(r) });
}

async function queuedRun(provider: string, model: string, content: string) {
  captureStarts();
  const sdk = client(provider);
  const assistant = await sdk.beta.assistants.create({ model, tools: [weather] });
  const thread = await sdk.beta.threads.create({ messages: [{ role: 'user', content }] });
  const run = await sdk.beta.threads.runs.create(thread.id, { assistant_id: assistant.id });
  expect(run.status).toBe('queued');
  const record = started.find((r) => r.run.id === run.id)!;
  return { sdk, thread, record, ref: runs.runRef(record) };
}

async function itemsOf(ref: { workspaceId: string; threadId: string; runId: string }) {
  const listedSteps = await steps.listSteps(ref, { limit: 100, order: 'asc' });
  const listedMessages = await messages.listMessages(ref.workspaceId, ref.threadId, { limit: 100, order: 'asc' }, ref.runId);
  listedSteps.items.forEach((s) => RunStepShape.parse(s));
  listedMessages.items.forEach((m) => MessageShape.parse(m));
  return { steps: listedSteps.items, messages: listedMessages.items };
}

describe('non-streamed runs through the engine (hooks wired in-process)', () => {
  it('createAndPoll + submitToolOutputsAndPoll on a managed Anthropic provider', async () => {
    restore = lifecycle.setLifecycleHooks({
      startRun: async (r) => void engine.runModelStep(r),
      submitToolOutputs: async (r, outputs) => {
        const resumed = await submit.submitToolOutputsToRun(r, outputs);
        if (!resumed) return undefined;
        void engine.runModelStep(resumed.record);
        return resumed.record.run;
      },
    });
    const sdk = client('@eng-claude');
    const assistant = await sdk.beta.assistants.create({ model: 'claude-3-5-haiku', instructions: 'Weather bot.', tools: [weather] });
    const thread = await sdk.beta.threads.create({ messages: [{ role: 'user', content: 'What is the weather in Lima?' }] });
    const waiting = await sdk.beta.threads.runs.createAndPoll(thread.id, { assistant_id: assistant.id }, { pollIntervalMs: 20 });
    RunShape.parse(waiting);
    expect(waiting.status).toBe('requires_action');
    const callId = waiting.required_action!.submit_tool_outputs.tool_calls[0]!.id;
    const final = await sdk.beta.threads.runs.submitToolOutputsAndPoll(
      waiting.id,
      { thread_id: thread.id, tool_outputs: [{ tool_call_id: callId, output: 'mild' }] },
      { pollIntervalMs: 20 },
    );
    RunShape.parse(final);
    expect(final.status).toBe('completed');
    const listed = await sdk.beta.threads.messages.list(thread.id, { run_id: final.id, order: 'asc' });
    expect(listed.data.map((m) => (m.content[0]!.type === 'text' ? m.content[0]!.text.value : ''))).toEqual(['Let me check the weather.', 'tool said: mild']);
  });
});

describe('engine idempotency: duplicate, late and retried deliveries', () => {
  it('a duplicate delivery of a finished step changes nothing; a concurrent duplicate writes one message and one step', async () => {
    const { record, ref } = await queuedRun('@eng-openai', 'gpt-4o-mini', 'What is the weather in Bern?');
    const first = await engine.runModelStep(record);
    expect(first).toMatchObject({ executed: true, run: { status: 'requires_action' } });
    const again = await engine.runModelStep(record);
    expect(again).toMatchObject({ executed: false, run: { status: 'requires_action' } });
    expect((await itemsOf(ref)).steps).toHaveLength(1);
    expect(openaiFake.count('/chat/completions')).toBe(1);

    const callId = first.run.required_action!.submit_tool_outputs.tool_calls[0]!.id;
    const resumed = await submit.submitToolOutputsToRun(record, [{ tool_call_id: callId, output: 'cold' }]);
    expect(resumed?.record.run.status).toBe('in_progress');
    expect(await submit.submitToolOutputsToRun(record, [{ tool_call_id: callId, output: 'other' }])).toBeUndefined();

    const both = await Promise.all([engine.runModelStep(resumed!.record), engine.runModelStep(resumed!.record)]);
    expect(both.filter((o) => o.executed)).toHaveLength(1);
    const final = await runs.getRun(ref);
    expect(final!.run.status).toBe('completed');
    const items = await itemsOf(ref);
    expect(items.steps.map((s) => [s.type, s.status])).toEqual([
      ['tool_calls', 'completed'],
      ['message_creation', 'completed'],
    ]);
    expect(items.messages).toHaveLength(1);
    expect(items.messages[0]!.content).toEqual([{ type: 'text', text: { value: 'tool said: cold', annotations: [] } }]);
    const stepUsage = items.steps.reduce((n, s) => n + s.usage!.total_tokens, 0);
    expect(final!.run.usage!.total_tokens).toBe(stepUsage);
    // A late delivery after the end: still nothing.
    expect(await engine.runModelStep(record)).toMatchObject({ executed: false, run: { status: 'completed' } });
    expect((await itemsOf(ref)).messages).toHaveLength(1);
  });

  it('two concurrent first deliveries of a queued run start it once and write one message', async () => {
    const { record, ref } = await queuedRun('@eng-openai', 'gpt-4o-mini', 'Say hi');
    const both = await Promise.all([engine.runModelStep(record), engine.runModelStep(record)]);
    expect(both.filter((o) => o.executed)).toHaveLength(1);
    const items = await itemsOf(ref);
    expect(items.steps).toHaveLength(1);
    expect(items.messages).toHaveLength(1);
    expect((await runs.getRun(ref))!.run).toMatchObject({ status: 'completed', incomplete_details: null });
  });

  it('a task that crashes after writing its message but before committing is retried without duplicates', async () => {
    const { record, ref } = await queuedRun('@eng-claude', 'claude-3-5-haiku', 'Tell me something');
    const crashing = {
      emit(event: string) {
        if (event === 'thread.run.step.completed') throw new Error('injected crash');
      },
    };
    await expect(engine.runModelStep(record, crashing)).rejects.toThrow('injected crash');
    const midway = await itemsOf(ref);
    expect((await runs.getRun(ref))!.run.status).toBe('in_progress');
    expect(midway.messages.map((m) => m.status)).toEqual(['completed']);

    const retried = await engine.runModelStep(record);
    expect(retried).toMatchObject({ executed: true, run: { status: 'completed' } });
    const items = await itemsOf(ref);
    expect(items.steps.map((s) => s.id)).toEqual(midway.steps.map((s) => s.id));
    expect(items.messages.map((m) => m.id)).toEqual(midway.messages.map((m) => m.id));
    expect(items.messages[0]!.content).toEqual([{ type: 'text', text: { value: 'echo: Tell me something', annotations: [] } }]);
    expect(items.steps[0]!.status).toBe('completed');
  });

  it('cancelRunNow finishes a cancelling run, cancelling its waiting tool step', async () => {
    const { sdk, thread, record, ref } = await queuedRun('@eng-openai', 'gpt-4o-mini', 'weather in Kyiv');
    expect((await engine.runModelStep(record)).run.status).toBe('requires_action');
    // The executor that would finish the cancel is the test (the workflow's hook would cancel
    // at once, since no execution of this run is running).
    const hooks = restore;
    const keepCancelling = lifecycle.setLifecycleHooks({ cancelRun: async () => undefined });
    restore = () => {
      keepCancelling();
      hooks?.();
    };
    const cancelling = await sdk.beta.threads.runs.cancel(record.run.id, { thread_id: thread.id });
    expect(cancelling.status).toBe('cancelling');
    const done = await engine.cancelRunNow(record);
    expect(done!.run).toMatchObject({ status: 'cancelled', required_action: null });
    expect(await engine.cancelRunNow(record)).toBeUndefined();
    expect((await itemsOf(ref)).steps.map((s) => s.status)).toEqual(['cancelled']);
    // The thread is released: a new run can start.
    expect((await sdk.beta.threads.runs.create(thread.id, { assistant_id: record.run.assistant_id })).status).toBe('queued');
  });
});
