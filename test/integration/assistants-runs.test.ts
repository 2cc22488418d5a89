import OpenAI from 'openai';
import type { AssistantStreamEvent } from 'openai/resources/beta/assistants';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { MessageShape, RunShape, RunStepShape, ThreadShape } from '../contract/assistants-shapes';
import { startAnthropicFake, startOpenAIFake, type FakeServer } from '../fakes';
import { call, startTestGateway } from '../support/gateway';

// Streamed runs through the official SDK's helpers, on a managed OpenAI-compatible
// provider and a managed Anthropic provider (both pointed at the fakes). No functions/
// module is imported statically: the gateway sets the environment before they load.
let gw: LocalGateway;
let openaiFake: FakeServer;
let claudeFake: FakeServer;
let steps: typeof import('../../functions/assistants/store/steps');

beforeAll(async () => {
  [openaiFake, claudeFake] = await Promise.all([startOpenAIFake(), startAnthropicFake()]);
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0' } });
  for (const [slug, provider, fake] of [
    ['run-openai', 'openai', openaiFake],
    ['run-claude', 'anthropic', claudeFake],
  ] as const) {
    const created = await call(gw, 'POST', '/v1/providers', { body: { slug, provider, api_key: 'sk-managed', custom_host: `${fake.url}/v1` } });
    expect(created.status).toBe(200);
  }
  steps = await import('../../functions/assistants/store/steps');
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all([openaiFake?.close(), claudeFake?.close()]);
});
afterEach(() => {
  openaiFake.reset();
  claudeFake.reset();
});

const client = (provider: string) =>
  new OpenAI({
    baseURL: gw.baseUrl,
    apiKey: 'unused-placeholder',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': provider },
  });
const weather = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { location: { type: 'string' } } } },
};
const words = (n: number, word = 'lorem') => Array.from({ length: n }, () => word).join(' ');

/** Every event of a stream, each payload checked against its shape. */
function record(stream: ReturnType<OpenAI['beta']['threads']['runs']['stream']>) {
  const events: AssistantStreamEvent[] = [];
  stream.on('event', (e) => {
    events.push(e);
    if (e.event === 'thread.created') ThreadShape.parse(e.data);
    else if (e.event.startsWith('thread.run.step.') && e.event !== 'thread.run.step.delta') RunStepShape.parse(e.data);
    else if (e.event.startsWith('thread.run.') && !e.event.startsWith('thread.run.step')) RunShape.parse(e.data);
    else if (e.event.startsWith('thread.message.') && e.event !== 'thread.message.delta') MessageShape.parse(e.data);
  });
  return events;
}

/** Event names with runs of the same delta event collapsed to one. */
const order = (events: AssistantStreamEvent[]) => events.map((e) => e.event).filter((name, i, all) => !(name.endsWith('.delta') && all[i - 1] === name));

const START = ['thread.run.created', 'thread.run.queued', 'thread.run.in_progress'];
const MESSAGE = [
  'thread.run.step.created',
  'thread.run.step.in_progress',
  'thread.message.created',
  'thread.message.in_progress',
  'thread.message.delta',
  'thread.message.completed',
  'thread.run.step.completed',
];
const TOOL_STEP = ['thread.run.step.created', 'thread.run.step.in_progress', 'thread.run.step.delta'];

async function roundTrip(provider: string, model: string, preamble: boolean) {
  const sdk = client(provider);
  const assistant = await sdk.beta.assistants.create({ model, instructions: 'You report the weather.', tools: [weather] });
  const thread = await sdk.beta.threads.create({ messages: [{ role: 'user', content: 'What is the weather in Paris?' }] });

  const first = sdk.beta.threads.runs.stream(thread.id, { assistant_id: assistant.id });
  const firstEvents = record(first);
  const toolCalls: string[] = [];
  first.on('toolCallCreated', (c) => toolCalls.push(c.type === 'function' ? c.function.name : c.type));
  const waiting = await first.finalRun();
  expect(waiting.status).toBe('requires_action');
  expect(order(firstEvents)).toEqual([...START, ...(preamble ? MESSAGE : []), ...TOOL_STEP, 'thread.run.requires_action']);
  expect(toolCalls).toEqual(['get_weather']);
  const pending = waiting.required_action!.submit_tool_outputs.tool_calls;
  expect(pending).toHaveLength(1);
  expect(JSON.parse(pending[0]!.function.arguments)).toEqual({ location: 'Paris' });
  expect(waiting.usage).toBeNull();

  const second = sdk.beta.threads.runs.submitToolOutputsStream(waiting.id, {
    thread_id: thread.id,
    tool_outputs: [{ tool_call_id: pending[0]!.id, output: '22C and sunny' }],
  });
  const secondEvents = record(second);
  let streamed = '';
  second.on('textDelta', (d) => (streamed += d.value ?? ''));
  const final = await second.finalRun();
  expect(final.status).toBe('completed');
  expect(order(secondEvents)).toEqual(['thread.run.step.completed', 'thread.run.in_progress', ...MESSAGE, 'thread.run.completed']);
  expect(streamed).toBe('tool said: 22C and sunny');
  expect(final.usage!.total_tokens).toBeGreaterThan(0);
  expect(final.usage!.total_tokens).toBe(final.usage!.prompt_tokens + final.usage!.completion_tokens);
  expect(final.completed_at).not.toBeNull();
  RunShape.parse(await sdk.beta.threads.runs.retrieve(final.id, { thread_id: thread.id }));

  const messages = await sdk.beta.threads.messages.list(thread.id, { order: 'asc' });
  messages.data.forEach((m) => MessageShape.parse(m));
  const answer = messages.data.at(-1)!;
  expect(answer).toMatchObject({ role: 'assistant', status: 'completed', run_id: final.id, assistant_id: assistant.id });
  expect(answer.content).toEqual([{ type: 'text', text: { value: 'tool said: 22C and sunny', annotations: [] } }]);
  const listed = await sdk.beta.threads.runs.steps.list(final.id, { thread_id: thread.id, order: 'asc' });
  listed.data.forEach((s) => RunStepShape.parse(s));
  const tool = listed.data.find((s) => s.type === 'tool_calls')!;
  expect(tool.status).toBe('completed');
  expect(tool.usage).not.toBeNull();
  expect(tool.step_details).toMatchObject({ tool_calls: [{ id: pending[0]!.id, function: { name: 'get_weather', output: '22C and sunny' } }] });
  expect(listed.data.map((s) => s.type)).toEqual([...(preamble ? ['message_creation'] : []), 'tool_calls', 'message_creation']);
  const summed = listed.data.reduce((n, s) => n + (s.usage?.total_tokens ?? 0), 0);
  expect(summed).toBe(final.usage!.total_tokens);
  return { thread, final, messages: messages.data };
}

describe('streamed runs: a full tool-call round trip with the SDK helpers', () => {
  it('runs on a managed OpenAI-compatible provider', async () => {
    const { messages } = await roundTrip('@run-openai', 'gpt-4o-mini', false);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    // The provider saw the instructions, the tool call and its output in the second call.
    const second = openaiFake.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)!.body as { messages: Array<{ role: string }> };
    expect(second.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
  });

  it('logs each model call like any gateway request: trace id = run id, the engine key, the managed provider', async () => {
    const { final } = await roundTrip('@run-openai', 'gpt-4o-mini', false);
    let logs = await call(gw, 'GET', `/v1/logs?trace_id=${final.id}`);
    for (let i = 0; i < 100 && logs.body.data.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 20));
      logs = await call(gw, 'GET', `/v1/logs?trace_id=${final.id}`);
    }
    expect(logs.body.data).toHaveLength(2);
    for (const entry of logs.body.data) {
      expect(entry).toMatchObject({
        route: 'assistants.runs',
        api_key_id: 'assistants-engine',
        managed_provider: 'run-openai',
        provider: 'openai',
        status: 200,
        stream: true,
        run_id: final.id,
      });
    }
    const logged = logs.body.data.reduce((n: number, e: { usage: { total_tokens: number } }) => n + e.usage.total_tokens, 0);
    expect(logged).toBe(final.usage!.total_tokens);
  });

  it('runs on a managed Anthropic provider (its text before the tool call becomes a message)', async () => {
    const { messages } = await roundTrip('@run-claude', 'claude-3-5-haiku', true);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'assistant']);
    expect(messages[1]!.content).toEqual([{ type: 'text', text: { value: 'Let me check the weather.', annotations: [] } }]);
    const second = claudeFake.requests.filter((r) => r.path === '/v1/messages').at(-1)!.body as {
      system: unknown;
      messages: Array<{ role: string; content: Array<{ type: string }> }>;
    };
    expect(second.system).toEqual([{ type: 'text', text: 'You report the weather.' }]);
    expect(second.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(second.messages[1]!.content.map((b) => b.type)).toEqual(['text', 'tool_use']);
    expect(second.messages[2]!.content.map((b) => b.type)).toEqual(['tool_result']);
  });

  it('streams create thread-and-run with thread.created first and ends with event: done / data: [DONE]', async () => {
    const sdk = client('@run-openai');
    const assistant = await sdk.beta.assistants.create({ model: 'gpt-4o-mini' });
    const stream = sdk.beta.threads.createAndRunStream({ assistant_id: assistant.id, thread: { messages: [{ role: 'user', content: 'Hello there' }] } });
    const events = record(stream);
    const final = await stream.finalRun();
    expect(final.status).toBe('completed');
    expect(order(events)).toEqual(['thread.created', ...START, ...MESSAGE, 'thread.run.completed']);
    const [message] = await stream.finalMessages();
    expect(message!.content[0]).toMatchObject({ type: 'text', text: { value: 'echo: Hello there' } });

    // The wire framing: `event:` + `data:` per event, `event: done` / `data: [DONE]` last.
    const raw = await fetch(`${gw.baseUrl}/threads/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@run-openai' },
      body: JSON.stringify({ assistant_id: assistant.id, stream: true, thread: { messages: [{ role: 'user', content: 'Hi' }] } }),
    });
    expect(raw.headers.get('content-type')).toContain('text/event-stream');
    const frames = (await raw.text()).trim().split('\n\n');
    for (const frame of frames) expect(frame).toMatch(/^event: [a-z._]+\ndata: /);
    expect(frames[0]!.startsWith('event: thread.created\n')).toBe(true);
    expect(frames.at(-2)!.startsWith('event: thread.run.completed\n')).toBe(true);
    expect(frames.at(-1)).toBe('event: done\ndata: [DONE]');
  });
});

describe('streamed runs: the state matrix', () => {
  async function setup(provider = '@run-openai', model = 'gpt-4o-mini', content = 'Hello', tools = [weather]) {
    const sdk = client(provider);
    const assistant = await sdk.beta.assistants.create({ model, tools });
    const thread = await sdk.beta.threads.create({ messages: [{ role: 'user', content }] });
    return { sdk, assistant, thread };
  }

  it('incomplete: max_completion_tokens (the model stops at the cap)', async () => {
    const { sdk, assistant, thread } = await setup('@run-openai', 'gpt-4o-mini', words(300));
    const stream = sdk.beta.threads.runs.stream(thread.id, { assistant_id: assistant.id, max_completion_tokens: 256 });
    const events = record(stream);
    const run = await stream.finalRun();
    expect(run).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_completion_tokens' }, max_completion_tokens: 256 });
    expect(run.usage!.completion_tokens).toBe(256);
    expect(order(events)).toEqual([...START, ...MESSAGE.slice(0, 5), 'thread.message.incomplete', 'thread.run.step.completed', 'thread.run.incomplete']);
    const fakeBody = openaiFake.last()!.body as { max_completion_tokens: number };
    expect(fakeBody.max_completion_tokens).toBe(256);
    const [message] = (await sdk.beta.threads.messages.list(thread.id, { run_id: run.id })).data;
    expect(message).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_tokens' } });
    expect(message!.incomplete_at).not.toBeNull();
  });

  it('a provider content filter leaves the message incomplete with reason content_filter; the run completes', async () => {
    const { sdk, assistant, thread } = await setup('@run-openai', 'gpt-4o-mini', 'tell me something [content-filter] please');
    const run = await sdk.beta.threads.runs.createAndPoll(thread.id, { assistant_id: assistant.id }, { pollIntervalMs: 100 });
    expect(run).toMatchObject({ status: 'completed', incomplete_details: null });
    const [message] = (await sdk.beta.threads.messages.list(thread.id, { run_id: run.id })).data;
    expect(message).toMatchObject({ role: 'assistant', status: 'incomplete', incomplete_details: { reason: 'content_filter' } });
    expect(message!.incomplete_at).not.toBeNull();
    expect(message!.completed_at).toBeNull();
  });

  it('incomplete: max_prompt_tokens (the thread is longer than the budget, even after auto truncation)', async () => {
    const { sdk, assistant, thread } = await setup('@run-claude', 'claude-3-5-haiku', words(300));
    const stream = sdk.beta.threads.runs.stream(thread.id, { assistant_id: assistant.id, max_prompt_tokens: 256 });
    const run = await stream.finalRun();
    expect(run).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_prompt_tokens' }, max_prompt_tokens: 256 });
    expect(run.usage!.prompt_tokens).toBeGreaterThan(256);
    RunShape.parse(run);
  });

  it('completed: last_messages truncation keeps a long history within max_prompt_tokens', async () => {
    const sdk = client('@run-openai');
    const assistant = await sdk.beta.assistants.create({ model: 'gpt-4o-mini' });
    const thread = await sdk.beta.threads.create({
      messages: [
        { role: 'user', content: words(400, 'old') },
        { role: 'assistant', content: words(100, 'reply') },
        { role: 'user', content: 'Short question' },
      ],
    });
    const stream = sdk.beta.threads.runs.stream(thread.id, {
      assistant_id: assistant.id,
      max_prompt_tokens: 256,
      truncation_strategy: { type: 'last_messages', last_messages: 1 },
    });
    const run = await stream.finalRun();
    expect(run.status).toBe('completed');
    expect(run.truncation_strategy).toEqual({ type: 'last_messages', last_messages: 1 });
    const sent = openaiFake.last()!.body as { messages: Array<{ role: string; content: string }> };
    expect(sent.messages).toEqual([{ role: 'user', content: 'Short question' }]);
  });

  it('failed: a provider 500 (no retries configured) ends the run with last_error server_error', async () => {
    const { sdk, assistant, thread } = await setup('@run-openai', 'fail-500');
    const stream = sdk.beta.threads.runs.stream(thread.id, { assistant_id: assistant.id });
    const events = record(stream);
    const run = await stream.finalRun();
    expect(run.status).toBe('failed');
    expect(run.last_error).toMatchObject({ code: 'server_error' });
    expect(run.last_error!.message.length).toBeGreaterThan(0);
    expect(run.failed_at).not.toBeNull();
    expect(run.usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
    expect(order(events)).toEqual([...START, 'thread.run.failed']);
    // The thread is free again.
    expect((await sdk.beta.threads.messages.create(thread.id, { role: 'user', content: 'again' })).role).toBe('user');
  });

  it('failed: a provider 429 on Anthropic is rate_limit_exceeded', async () => {
    const { sdk, assistant, thread } = await setup('@run-claude', 'fail-429');
    const run = await sdk.beta.threads.runs.stream(thread.id, { assistant_id: assistant.id }).finalRun();
    expect(run).toMatchObject({ status: 'failed', last_error: { code: 'rate_limit_exceeded' } });
  });

  it('cancelled: a run waiting for tool outputs is cancelled at once', async () => {
    const { sdk, assistant, thread } = await setup('@run-openai', 'gpt-4o-mini', 'weather in Oslo?');
    const waiting = await sdk.beta.threads.runs.stream(thread.id, { assistant_id: assistant.id }).finalRun();
    expect(waiting.status).toBe('requires_action');
    const cancelled = await sdk.beta.threads.runs.cancel(waiting.id, { thread_id: thread.id });
    expect(cancelled).toMatchObject({ status: 'cancelled', required_action: null });
    expect(cancelled.cancelled_at).not.toBeNull();
    RunShape.parse(cancelled);
    const listed = await sdk.beta.threads.runs.steps.list(waiting.id, { thread_id: thread.id });
    expect(listed.data.map((s) => s.status)).toEqual(['cancelled']);
  });

  it('cancelled: a cancel while the model is streaming ends the stream with thread.run.cancelled', async () => {
    openaiFake.setBehaviour({ chunkDelayMs: 25 });
    const { sdk, assistant, thread } = await setup('@run-openai', 'gpt-4o-mini', words(100, 'slow'));
    const stream = sdk.beta.threads.runs.stream(thread.id, { assistant_id: assistant.id });
    const events = record(stream);
    let cancelling: Promise<unknown> | undefined;
    stream.on('textCreated', () => {
      const runId = stream.currentRun()!.id;
      cancelling = sdk.beta.threads.runs.cancel(runId, { thread_id: thread.id });
    });
    const run = await stream.finalRun();
    expect(await cancelling).toMatchObject({ status: 'cancelling' });
    expect(run.status).toBe('cancelled');
    expect(events.at(-1)!.event).toBe('thread.run.cancelled');
  });

  it('cancelled: a caller that disconnects mid-stream stops the run', async () => {
    openaiFake.setBehaviour({ chunkDelayMs: 25 });
    const { sdk, assistant, thread } = await setup('@run-openai', 'gpt-4o-mini', words(200, 'slow'));
    const stream = sdk.beta.threads.runs.stream(thread.id, { assistant_id: assistant.id });
    let runId = '';
    stream.on('textCreated', () => {
      runId = stream.currentRun()!.id;
      stream.abort();
    });
    await stream.done().catch(() => undefined);
    expect(runId).not.toBe('');
    let run = await sdk.beta.threads.runs.retrieve(runId, { thread_id: thread.id });
    for (let i = 0; i < 200 && run.status === 'in_progress'; i++) {
      await new Promise((r) => setTimeout(r, 25));
      run = await sdk.beta.threads.runs.retrieve(runId, { thread_id: thread.id });
    }
    expect(run.status).toBe('cancelled');
    // The run moves first; its message and step are closed right after (engine/model-step.ts settle).
    const closed = async () => {
      const [message] = (await sdk.beta.threads.messages.list(thread.id, { run_id: runId })).data;
      const listed = await steps.listSteps({ workspaceId: gw.workspaceId, threadId: thread.id, runId }, { limit: 10, order: 'asc' });
      return { message, stepStatuses: listed.items.map((s) => s.status) };
    };
    let after = await closed();
    for (let i = 0; i < 200 && (after.message?.status === 'in_progress' || after.stepStatuses.includes('in_progress')); i++) {
      await new Promise((r) => setTimeout(r, 25));
      after = await closed();
    }
    expect(after.message).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'run_cancelled' } });
    expect(after.stepStatuses).toEqual(['cancelled']);
  });

  it('reports an engine failure as `event: error` (the thread was deleted mid-run)', async () => {
    openaiFake.setBehaviour({ chunkDelayMs: 25 });
    const { sdk, assistant, thread } = await setup('@run-openai', 'gpt-4o-mini', words(100, 'slow'));
    const stream = sdk.beta.threads.runs.stream(thread.id, { assistant_id: assistant.id });
    stream.on('textCreated', () => void sdk.beta.threads.delete(thread.id));
    const err = await stream.finalRun().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).type).toBe('server_error');
  });

  it('refuses a streamed submit for a run that is not waiting (400), and continues a streamed run polled', async () => {
    const { sdk, assistant, thread } = await setup('@run-openai', 'gpt-4o-mini', 'weather in Rome?');
    const waiting = await sdk.beta.threads.runs.stream(thread.id, { assistant_id: assistant.id }).finalRun();
    const callId = waiting.required_action!.submit_tool_outputs.tool_calls[0]!.id;
    // Without `stream`, the outputs are stored and the inline run continues after the answer.
    const resumed = await sdk.beta.threads.runs.submitToolOutputs(waiting.id, {
      thread_id: thread.id,
      tool_outputs: [{ tool_call_id: callId, output: 'warm' }],
    });
    expect(resumed.status).toBe('in_progress');
    const final = await sdk.beta.threads.runs.poll(waiting.id, { thread_id: thread.id }, { pollIntervalMs: 20 });
    expect(final.status).toBe('completed');
    const again = sdk.beta.threads.runs.submitToolOutputsStream(waiting.id, { thread_id: thread.id, tool_outputs: [{ tool_call_id: callId, output: 'x' }] });
    const err = await again.finalRun().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
  });
});
