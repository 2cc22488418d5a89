import { DescribeExecutionCommand, SFNClient, StopExecutionCommand } from '@aws-sdk/client-sfn';
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { MessageShape, RunShape, RunStepShape } from '../contract/assistants-shapes';
import { startAnthropicFake, startOpenAIFake, type FakeServer, type RecordedRequest } from '../fakes';
import { call, startTestGateway } from '../support/gateway';

// Non-streamed runs end to end through the real lifecycle: the API's hooks
// send the run to the SQS FIFO queue (fauxqs), the `run-start` consumer starts the runs
// state machine (the shared ASL in the local Step Functions), whose `run-step` tasks drive
// the engine; submit_tool_outputs answers the task token, cancel stops the execution and
// the `run-finalize` finalizer finishes the run. The official openai SDK's polling helpers
// drive it against two fake providers behind managed providers (custom_host).
//
// Fault injection (test-only, nothing in functions/ knows about it): vi.mock wraps two
// functions the workers reach, for threads a test arms, once each:
// - store/runs `transitionRun` to `completed` throws: the model step dies after the engine
//   wrote (and closed) its message but before the commit;
// - engine `runModelStepByRef` throws after returning: the worker dies after the commit;
// - workflow/steps `runStep` holds a `wait` action until the test lets it go: outputs arrive
//   before the WaitForToolOutputs task has stored its token.
// The local runtime loads the worker modules through vitest's module graph, so the mocks
// apply to them exactly as a crash of the Lambda would at that point. No functions/ module
// is imported statically: the gateway sets the environment before they load.
const faults = vi.hoisted(() => ({
  beforeCommit: new Set<string>(),
  afterStep: new Set<string>(),
  holdWait: new Map<string, Promise<void>>(),
  fired: [] as string[],
}));

vi.mock('../../functions/assistants/store/runs', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../functions/assistants/store/runs')>();
  return {
    ...original,
    transitionRun: async (...args: Parameters<typeof original.transitionRun>) => {
      const [ref, , patch] = args;
      if (patch.status === 'completed' && faults.beforeCommit.delete(ref.threadId)) {
        faults.fired.push(`before-commit:${ref.runId}`);
        throw new Error('injected crash: the model step died after writing its message, before committing');
      }
      return original.transitionRun(...args);
    },
  };
});

vi.mock('../../functions/assistants/engine/model-step', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../functions/assistants/engine/model-step')>();
  return {
    ...original,
    runModelStepByRef: async (...args: Parameters<typeof original.runModelStepByRef>) => {
      const outcome = await original.runModelStepByRef(...args);
      if (faults.afterStep.delete(args[0].threadId)) {
        faults.fired.push(`after-step:${args[0].runId}`);
        throw new Error('injected crash: the model-step worker died after its step committed');
      }
      return outcome;
    },
  };
});

vi.mock('../../functions/assistants/workflow/steps', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../functions/assistants/workflow/steps')>();
  return {
    ...original,
    runStep: async (...args: Parameters<typeof original.runStep>) => {
      const gate = args[0].action === 'wait' ? faults.holdWait.get(args[0].threadId) : undefined;
      if (gate) {
        faults.holdWait.delete(args[0].threadId);
        faults.fired.push(`held-wait:${args[0].runId}`);
        await gate;
      }
      return original.runStep(...args);
    },
  };
});

let gw: LocalGateway;
let openaiFake: FakeServer;
let claudeFake: FakeServer;
let sfn: SFNClient;
let sqs: SQSClient;

const LOCAL = { region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };

beforeAll(async () => {
  [openaiFake, claudeFake] = await Promise.all([startOpenAIFake(), startAnthropicFake()]);
  // Retry intervals of the local machine capped at 50 ms (the ModelStep retry after a crash).
  gw = await startTestGateway({ workflowMaxWaitMs: 50, env: { AUTH_CACHE_TTL_MS: '0' } });
  for (const [slug, provider, fake] of [
    ['lc-openai', 'openai', openaiFake],
    ['lc-claude', 'anthropic', claudeFake],
  ] as const) {
    const created = await call(gw, 'POST', '/v1/providers', { body: { slug, provider, api_key: 'sk-managed', custom_host: `${fake.url}/v1` } });
    expect(created.status, created.text).toBe(200);
  }
  sfn = new SFNClient({ ...LOCAL, endpoint: gw.stepFunctions.endpoint });
  sqs = new SQSClient({ ...LOCAL, endpoint: gw.sqs.endpoint });
});
afterAll(async () => {
  sfn?.destroy();
  sqs?.destroy();
  await gw?.stop();
  await Promise.all([openaiFake?.close(), claudeFake?.close()]);
});
afterEach(async () => {
  // Let every execution of the test end before the next one counts requests.
  await until(() => gw.stepFunctions.running() === 0);
  openaiFake.reset();
  claudeFake.reset();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Poll until `check` holds; the test's own timeout bounds the wait. */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await sleep(25);
}

const client = (provider: string) =>
  new OpenAI({
    baseURL: gw.baseUrl,
    apiKey: 'unused',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': `@${provider}` },
  });
const POLL = { pollIntervalMs: 25 };
const weather = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { location: { type: 'string' } } } },
};
type ApiError = InstanceType<typeof OpenAI.APIError>;
const failure = (p: Promise<unknown>) =>
  p.then(
    () => Promise.reject(new Error('expected a failure')),
    (e: unknown) => e as ApiError,
  );

const executionArn = (runId: string) => `${gw.stepFunctions.arns.runs!.replace(':stateMachine:', ':execution:')}:${runId}`;
const execution = (runId: string) => sfn.send(new DescribeExecutionCommand({ executionArn: executionArn(runId) }));
/** The execution once it has ended: its last state runs just after the run's final write. */
async function endedExecution(runId: string) {
  await until(async () => (await execution(runId)).status !== 'RUNNING');
  return execution(runId);
}
const runsQueue = () => gw.sqs.queues.runs!;
/**
 * Until WaitForToolOutputs has stored its task token on the run: the run shows
 * requires_action as soon as ModelStep commits, a moment before the machine gets there.
 */
async function untilWaitingOnToken(threadId: string, runId: string): Promise<void> {
  const [{ getItem }, { runKey }] = await Promise.all([import('../../functions/shared/db/ops'), import('../../functions/assistants/store/db')]);
  await until(async () => typeof (await getItem('threads', runKey(gw.workspaceId, threadId, runId), true))?.engine_task_token === 'string');
}

async function queueDepth(url: string): Promise<number> {
  const out = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
    }),
  );
  const a = out.Attributes ?? {};
  return Number(a.ApproximateNumberOfMessages ?? 0) + Number(a.ApproximateNumberOfMessagesNotVisible ?? 0) + Number(a.ApproximateNumberOfMessagesDelayed ?? 0);
}

/** Model requests a fake received for a conversation (by a marker in its user text). */
const requestsFor = (fake: FakeServer, marker: string) => fake.count((r: RecordedRequest) => JSON.stringify(r.body ?? '').includes(marker));

async function runItems(sdk: OpenAI, threadId: string, runId: string) {
  const messages = (await sdk.beta.threads.messages.list(threadId, { run_id: runId, order: 'asc' })).data;
  const steps = (await sdk.beta.threads.runs.steps.list(runId, { thread_id: threadId, order: 'asc' })).data;
  messages.forEach((m) => MessageShape.parse(m));
  steps.forEach((s) => RunStepShape.parse(s));
  return { messages, steps };
}
const textOf = (m: OpenAI.Beta.Threads.Message) => (m.content[0]?.type === 'text' ? m.content[0].text.value : '');

async function setup(provider: string, model: string, content: string, tools = [weather]) {
  const sdk = client(provider);
  const assistant = await sdk.beta.assistants.create({ model, instructions: 'You are a weather bot.', tools });
  const thread = await sdk.beta.threads.create({ messages: [{ role: 'user', content }] });
  return { sdk, assistant, thread };
}

describe('non-streamed runs: SQS FIFO -> consumer -> runs state machine', () => {
  it('completes a run (queued -> in_progress -> completed) in one execution named after the run', async () => {
    const marker = 'Hello from the completed test';
    const { sdk, assistant, thread } = await setup('lc-openai', 'gpt-4o-mini', marker, []);
    const run = await sdk.beta.threads.runs.createAndPoll(thread.id, { assistant_id: assistant.id }, POLL);
    RunShape.parse(run);
    expect(run).toMatchObject({ status: 'completed', last_error: null, required_action: null, expires_at: null, assistant_id: assistant.id });
    expect(run.started_at).toBeGreaterThanOrEqual(run.created_at);
    expect(run.completed_at).toBeGreaterThanOrEqual(run.started_at!);
    expect(run.usage!.total_tokens).toBeGreaterThan(0);

    const { messages, steps } = await runItems(sdk, thread.id, run.id);
    expect(messages.map((m) => [m.role, textOf(m), m.assistant_id, m.run_id])).toEqual([['assistant', `echo: ${marker}`, assistant.id, run.id]]);
    expect(steps.map((s) => [s.type, s.status])).toEqual([['message_creation', 'completed']]);
    expect(requestsFor(openaiFake, marker)).toBe(1);

    // The run went through the queue and the machine: one execution, named after the run,
    // with the run's reference as input (the message the API sent, group = thread id).
    const exec = await endedExecution(run.id);
    expect(exec.status).toBe('SUCCEEDED');
    expect(JSON.parse(exec.input!)).toEqual({ workspaceId: gw.workspaceId, threadId: thread.id, runId: run.id });
    expect(runsQueue().url).toMatch(/\.fifo$/);
    await until(async () => (await queueDepth(runsQueue().url)) === 0);
  });

  it.each([
    ['lc-openai', 'gpt-4o-mini'],
    ['lc-claude', 'claude-3-5-haiku'],
  ])('requires_action -> submit_tool_outputs -> completed, a full tool-call round trip on %s', async (provider, model) => {
    const fake = provider === 'lc-openai' ? openaiFake : claudeFake;
    const marker = `What is the weather in Lima? (${provider})`;
    const { sdk, assistant, thread } = await setup(provider, model, marker);
    const waiting = await sdk.beta.threads.runs.createAndPoll(thread.id, { assistant_id: assistant.id }, POLL);
    RunShape.parse(waiting);
    expect(waiting.status).toBe('requires_action');
    expect(waiting.usage).toBeNull();
    const calls = waiting.required_action!.submit_tool_outputs.tool_calls;
    expect(calls).toHaveLength(1);
    expect(calls[0]!.function.name).toBe('get_weather');
    expect(JSON.parse(calls[0]!.function.arguments)).toEqual({ location: 'Lima' });
    // The machine waits on the task token; the thread stays claimed meanwhile.
    await until(async () => (await execution(waiting.id)).status === 'RUNNING');
    const second = await failure(sdk.beta.threads.runs.create(thread.id, { assistant_id: assistant.id }));
    expect(second).toBeInstanceOf(OpenAI.BadRequestError);
    expect(second.status).toBe(400);

    const final = await sdk.beta.threads.runs.submitToolOutputsAndPoll(
      waiting.id,
      { thread_id: thread.id, tool_outputs: [{ tool_call_id: calls[0]!.id, output: 'mild and sunny' }] },
      POLL,
    );
    RunShape.parse(final);
    expect(final).toMatchObject({ status: 'completed', required_action: null, last_error: null, expires_at: null });
    const { messages, steps } = await runItems(sdk, thread.id, final.id);
    expect(textOf(messages.at(-1)!)).toBe('tool said: mild and sunny');
    for (const m of messages) expect(m).toMatchObject({ role: 'assistant', assistant_id: assistant.id, run_id: final.id, status: 'completed' });
    const toolStep = steps.find((s) => s.type === 'tool_calls')!;
    expect(toolStep.status).toBe('completed');
    expect(toolStep.step_details).toMatchObject({ type: 'tool_calls', tool_calls: [{ id: calls[0]!.id, function: { output: 'mild and sunny' } }] });
    expect(steps.at(-1)).toMatchObject({ type: 'message_creation', status: 'completed' });
    expect(final.usage!.total_tokens).toBe(steps.reduce((n, s) => n + s.usage!.total_tokens, 0));
    expect(requestsFor(fake, marker)).toBe(2);
    expect((await endedExecution(final.id)).status).toBe('SUCCEEDED');
  });

  it('fails with last_error when the provider fails (fail-500); the thread is released', async () => {
    const sdk = client('lc-openai');
    const broken = await sdk.beta.assistants.create({ model: 'gpt-4o-mini-fail-500' });
    const thread = await sdk.beta.threads.create({ messages: [{ role: 'user', content: 'This will fail' }] });
    const run = await sdk.beta.threads.runs.createAndPoll(thread.id, { assistant_id: broken.id }, POLL);
    RunShape.parse(run);
    expect(run.status).toBe('failed');
    expect(run.last_error).toMatchObject({ code: 'server_error', message: expect.any(String) });
    expect(run.failed_at).toBeGreaterThanOrEqual(run.created_at);
    expect(run.expires_at).toBeNull();
    expect((await runItems(sdk, thread.id, run.id)).messages.filter((m) => m.status === 'completed')).toEqual([]);
    // A provider failure is a run outcome, not a workflow failure.
    expect((await endedExecution(run.id)).status).toBe('SUCCEEDED');
    const working = await sdk.beta.assistants.create({ model: 'gpt-4o-mini' });
    expect((await sdk.beta.threads.runs.createAndPoll(thread.id, { assistant_id: working.id }, POLL)).status).toBe('completed');
  });

  it('cancels a run waiting for tool outputs: the execution is stopped, the finalizer cancels the run and frees the thread', async () => {
    const { sdk, assistant, thread } = await setup('lc-claude', 'claude-3-5-haiku', 'What is the weather in Oslo?');
    const waiting = await sdk.beta.threads.runs.createAndPoll(thread.id, { assistant_id: assistant.id }, POLL);
    expect(waiting.status).toBe('requires_action');
    // Cancelled while the execution waits on its token, so the stop is what ends it.
    await untilWaitingOnToken(thread.id, waiting.id);
    const cancelling = await sdk.beta.threads.runs.cancel(waiting.id, { thread_id: thread.id });
    RunShape.parse(cancelling);
    expect(cancelling.status).toBe('cancelling');
    let run = cancelling;
    await until(async () => (run = await sdk.beta.threads.runs.retrieve(waiting.id, { thread_id: thread.id })).status !== 'cancelling');
    RunShape.parse(run);
    expect(run).toMatchObject({ status: 'cancelled', required_action: null, expires_at: null });
    expect(run.cancelled_at).toBeGreaterThanOrEqual(run.created_at);
    expect((await endedExecution(run.id)).status).toBe('ABORTED');
    const { steps } = await runItems(sdk, thread.id, run.id);
    expect(steps.find((s) => s.type === 'tool_calls')?.status).toBe('cancelled');
    // Late outputs change nothing; the thread takes a new run.
    const late = await failure(
      sdk.beta.threads.runs.submitToolOutputs(run.id, {
        thread_id: thread.id,
        tool_outputs: [{ tool_call_id: waiting.required_action!.submit_tool_outputs.tool_calls[0]!.id, output: 'x' }],
      }),
    );
    expect(late.status).toBe(400);
    await sdk.beta.threads.messages.create(thread.id, { role: 'user', content: 'Never mind, say hi' });
    expect((await sdk.beta.threads.runs.createAndPoll(thread.id, { assistant_id: assistant.id }, POLL)).status).toBe('completed');
  });

  it('cancels a run while it is queued or while its model call is under way', async () => {
    // A slow model (the fake waits before answering) keeps the model step running.
    openaiFake.setBehaviour({ latencyMs: 4000 });
    const { sdk, assistant, thread } = await setup('lc-openai', 'gpt-4o-mini', 'Slow answer one', []);

    // (1) Right after create: queued, or just picked up by the consumer.
    const first = await sdk.beta.threads.runs.create(thread.id, { assistant_id: assistant.id });
    expect(['queued', 'in_progress']).toContain(first.status);
    expect((await sdk.beta.threads.runs.cancel(first.id, { thread_id: thread.id })).status).toBe('cancelling');
    let run = first;
    await until(async () => (run = await sdk.beta.threads.runs.retrieve(first.id, { thread_id: thread.id })).status !== 'cancelling');
    expect(run.status).toBe('cancelled');
    RunShape.parse(run);
    // Either the execution was stopped, or (not started yet at cancel time) its first task finished the cancel.
    await until(async () => (await execution(first.id)).status !== 'RUNNING');
    expect(['ABORTED', 'SUCCEEDED']).toContain((await execution(first.id)).status);

    // (2) While the model call is under way: the request has reached the provider.
    await sdk.beta.threads.messages.create(thread.id, { role: 'user', content: 'Slow answer two' });
    const second = await sdk.beta.threads.runs.create(thread.id, { assistant_id: assistant.id });
    await until(() => requestsFor(openaiFake, 'Slow answer two') === 1);
    expect((await sdk.beta.threads.runs.retrieve(second.id, { thread_id: thread.id })).status).toBe('in_progress');
    expect((await sdk.beta.threads.runs.cancel(second.id, { thread_id: thread.id })).status).toBe('cancelling');
    await until(async () => (run = await sdk.beta.threads.runs.retrieve(second.id, { thread_id: thread.id })).status !== 'cancelling');
    expect(run).toMatchObject({ status: 'cancelled', expires_at: null });
    // Stopped (ABORTED), unless the engine's own cancel check ended the step a moment before the stop.
    await until(async () => (await execution(second.id)).status !== 'RUNNING');
    expect(['ABORTED', 'SUCCEEDED']).toContain((await execution(second.id)).status);
    for (const id of [first.id, second.id]) {
      expect((await runItems(sdk, thread.id, id)).messages.filter((m) => m.status === 'completed')).toEqual([]);
    }
    openaiFake.setBehaviour({ latencyMs: undefined });
    await sdk.beta.threads.messages.create(thread.id, { role: 'user', content: 'Fast answer three' });
    expect((await sdk.beta.threads.runs.createAndPoll(thread.id, { assistant_id: assistant.id }, POLL)).status).toBe('completed');
  });

  it('fails a run whose execution died (stopped outside the API): the finalizer sets last_error and frees the thread', async () => {
    const { sdk, assistant, thread } = await setup('lc-openai', 'gpt-4o-mini', 'What is the weather in Quito?');
    const waiting = await sdk.beta.threads.runs.createAndPoll(thread.id, { assistant_id: assistant.id }, POLL);
    expect(waiting.status).toBe('requires_action');
    await until(async () => (await execution(waiting.id)).status === 'RUNNING');
    await sfn.send(new StopExecutionCommand({ executionArn: executionArn(waiting.id), error: 'Operator', cause: 'stopped by hand' }));
    let run = waiting;
    await until(async () => (run = await sdk.beta.threads.runs.retrieve(waiting.id, { thread_id: thread.id })).status === 'failed');
    RunShape.parse(run);
    expect(run.last_error).toMatchObject({ code: 'server_error', message: expect.stringContaining('aborted') });
    expect((await runItems(sdk, thread.id, run.id)).steps.find((s) => s.type === 'tool_calls')?.status).toBe('failed');
    await sdk.beta.threads.messages.create(thread.id, { role: 'user', content: 'Say hi instead' });
    expect((await sdk.beta.threads.runs.createAndPoll(thread.id, { assistant_id: assistant.id }, POLL)).status).toBe('completed');
  });
});

describe('exactly once: redeliveries and crashed workers', () => {
  it('a duplicate SQS delivery starts nothing new: one execution, one answer, one message', async () => {
    const marker = 'weather in Bern (duplicate delivery)';
    const { sdk, assistant, thread } = await setup('lc-openai', 'gpt-4o-mini', `What is the ${marker}?`);
    const waiting = await sdk.beta.threads.runs.createAndPoll(thread.id, { assistant_id: assistant.id }, POLL);
    expect(waiting.status).toBe('requires_action');
    await until(async () => (await execution(waiting.id)).status === 'RUNNING');
    const started = (await execution(waiting.id)).startDate!.getTime();

    // The same message again, twice (other dedup ids, as a redelivery after the 5-minute
    // dedup window would be), while the execution waits for tool outputs...
    const body = JSON.stringify({ workspaceId: gw.workspaceId, threadId: thread.id, runId: waiting.id });
    const redeliver = async (n: number) => {
      await sqs.send(
        new SendMessageCommand({ QueueUrl: runsQueue().url, MessageBody: body, MessageGroupId: thread.id, MessageDeduplicationId: `${waiting.id}-again-${n}` }),
      );
    };
    await redeliver(1);
    await redeliver(2);
    await until(async () => (await queueDepth(runsQueue().url)) === 0);
    const during = await execution(waiting.id);
    expect(during.status).toBe('RUNNING');
    expect(during.startDate!.getTime()).toBe(started);
    expect(gw.stepFunctions.running()).toBe(1);
    expect((await sdk.beta.threads.runs.retrieve(waiting.id, { thread_id: thread.id })).status).toBe('requires_action');

    const callId = waiting.required_action!.submit_tool_outputs.tool_calls[0]!.id;
    const final = await sdk.beta.threads.runs.submitToolOutputsAndPoll(
      waiting.id,
      { thread_id: thread.id, tool_outputs: [{ tool_call_id: callId, output: 'cold' }] },
      POLL,
    );
    expect(final.status).toBe('completed');
    // ...and once more after the run ended.
    await redeliver(3);
    await until(async () => (await queueDepth(runsQueue().url)) === 0);
    await until(() => gw.stepFunctions.running() === 0);

    expect((await endedExecution(final.id)).status).toBe('SUCCEEDED');
    const after = await sdk.beta.threads.runs.retrieve(final.id, { thread_id: thread.id });
    expect(after).toEqual(final);
    const { messages, steps } = await runItems(sdk, thread.id, final.id);
    expect(messages.map(textOf)).toEqual(['tool said: cold']);
    expect(steps.map((s) => [s.type, s.status])).toEqual([
      ['tool_calls', 'completed'],
      ['message_creation', 'completed'],
    ]);
    expect(requestsFor(openaiFake, marker)).toBe(2);
    expect(await queueDepth(runsQueue().deadLetterUrl)).toBe(0);
  });

  it('a model-step worker that dies after writing its message, before committing, is retried: one message, completed once', async () => {
    const marker = 'Tell me something (crash before commit)';
    const { sdk, assistant, thread } = await setup('lc-claude', 'claude-3-5-haiku', marker, []);
    faults.beforeCommit.add(thread.id);
    const run = await sdk.beta.threads.runs.createAndPoll(thread.id, { assistant_id: assistant.id }, POLL);
    expect(faults.fired).toContain(`before-commit:${run.id}`);
    RunShape.parse(run);
    expect(run.status).toBe('completed');
    // The crashed attempt called the model and wrote the message; the retry called it again
    // and wrote nothing twice (same ids, conditional writes), then committed once.
    expect(requestsFor(claudeFake, marker)).toBe(2);
    const { messages, steps } = await runItems(sdk, thread.id, run.id);
    expect(messages.map((m) => [textOf(m), m.status])).toEqual([[`echo: ${marker}`, 'completed']]);
    expect(steps.map((s) => [s.type, s.status])).toEqual([['message_creation', 'completed']]);
    expect((await endedExecution(run.id)).status).toBe('SUCCEEDED');
    expect((await sdk.beta.threads.messages.list(thread.id)).data.filter((m) => m.role === 'assistant')).toHaveLength(1);
  });

  it('a model-step worker that dies after its step committed is retried as a no-op', async () => {
    const marker = 'Tell me something (crash after commit)';
    const { sdk, assistant, thread } = await setup('lc-openai', 'gpt-4o-mini', marker, []);
    faults.afterStep.add(thread.id);
    const run = await sdk.beta.threads.runs.createAndPoll(thread.id, { assistant_id: assistant.id }, POLL);
    await until(() => gw.stepFunctions.running() === 0);
    expect(faults.fired).toContain(`after-step:${run.id}`);
    expect(run.status).toBe('completed');
    expect(requestsFor(openaiFake, marker)).toBe(1);
    const { messages } = await runItems(sdk, thread.id, run.id);
    expect(messages.map(textOf)).toEqual([`echo: ${marker}`]);
    expect((await endedExecution(run.id)).status).toBe('SUCCEEDED');
    expect(await sdk.beta.threads.runs.retrieve(run.id, { thread_id: thread.id })).toEqual(run);
  });
});

describe('races between the API and the workflow', () => {
  it('outputs submitted before the wait stored its token still resume the run (RunNotWaiting -> MarkInProgress -> ModelStep)', async () => {
    const marker = 'weather in Accra (early outputs)';
    const { sdk, assistant, thread } = await setup('lc-openai', 'gpt-4o-mini', `What is the ${marker}?`);
    let release!: () => void;
    faults.holdWait.set(thread.id, new Promise<void>((r) => (release = r)));
    const waiting = await sdk.beta.threads.runs.createAndPoll(thread.id, { assistant_id: assistant.id }, POLL);
    expect(waiting.status).toBe('requires_action');
    const callId = waiting.required_action!.submit_tool_outputs.tool_calls[0]!.id;
    // The run shows requires_action as soon as ModelStep commits, which can be before the
    // machine reaches WaitForToolOutputs: wait until the wait task is held (before storing
    // its token), or a submit landing first would send ModelStep straight on (no wait at all).
    await until(() => faults.fired.includes(`held-wait:${waiting.id}`));
    // The submit finds no token: the run is resumed all the same, and the API answers with
    // it in_progress.
    const submitted = await sdk.beta.threads.runs.submitToolOutputs(waiting.id, {
      thread_id: thread.id,
      tool_outputs: [{ tool_call_id: callId, output: 'hot' }],
    });
    expect(submitted.status).toBe('in_progress');
    release();
    const final = await sdk.beta.threads.runs.poll(waiting.id, { thread_id: thread.id }, POLL);
    expect(final.status).toBe('completed');
    expect((await runItems(sdk, thread.id, final.id)).messages.map(textOf)).toEqual(['tool said: hot']);
    expect(requestsFor(openaiFake, marker)).toBe(2);
    await until(async () => (await execution(final.id)).status !== 'RUNNING');
    expect((await endedExecution(final.id)).status).toBe('SUCCEEDED');
  });
});

describe('streamed runs stay out of the workflow', () => {
  it('a streamed run waiting for outputs is never expired, failed or resumed by the workflow workers', async () => {
    const { sdk, assistant, thread } = await setup('lc-openai', 'gpt-4o-mini', 'What is the weather in Riga?');
    const stream = sdk.beta.threads.runs.stream(thread.id, { assistant_id: assistant.id });
    const waiting = await stream.finalRun();
    expect(waiting.status).toBe('requires_action');
    const ref = { workspaceId: gw.workspaceId, threadId: thread.id, runId: waiting.id };
    // No execution exists for it; stray deliveries of every task and of the finalizer change nothing.
    expect(await execution(waiting.id).catch((e: Error) => e.name)).toBe('ExecutionDoesNotExist');
    const step = (await import('../../functions/workers/run-step')).handler;
    const finalize = (await import('../../functions/workers/run-finalize')).handler;
    await expect(step({ action: 'wait', ...ref, taskToken: 'stray-token', timeoutSeconds: 1 })).rejects.toMatchObject({ name: 'RunNotWaiting' });
    expect(await step({ action: 'expire', ...ref })).toEqual({ next: 'done', status: 'requires_action' });
    expect(await step({ action: 'fail', ...ref, error: { Error: 'X', Cause: 'stray' } })).toEqual({ next: 'done', status: 'requires_action' });
    expect(await step({ action: 'model', ...ref })).toEqual({ next: 'done', status: 'requires_action' });
    await finalize({
      version: '0',
      id: 'stray',
      'detail-type': 'Step Functions Execution Status Change',
      source: 'aws.states',
      account: '000000000000',
      time: new Date().toISOString(),
      region: 'us-east-1',
      resources: [],
      detail: { executionArn: executionArn(waiting.id), status: 'ABORTED', input: JSON.stringify(ref), cause: null },
    });
    const still = await sdk.beta.threads.runs.retrieve(waiting.id, { thread_id: thread.id });
    expect(still).toEqual(waiting);
    // The streamed run continues on its own (inline) when its outputs arrive.
    const callId = waiting.required_action!.submit_tool_outputs.tool_calls[0]!.id;
    const done = await sdk.beta.threads.runs.submitToolOutputsAndPoll(
      waiting.id,
      { thread_id: thread.id, tool_outputs: [{ tool_call_id: callId, output: 'breezy' }] },
      POLL,
    );
    expect(done.status).toBe('completed');
    expect(textOf((await runItems(sdk, thread.id, done.id)).messages.at(-1)!)).toBe('tool said: breezy');
  });
});
