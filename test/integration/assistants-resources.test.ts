import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { AssistantShape, deletedShape, listShape, MessageShape, RunShape, RunStepShape, ThreadShape } from '../contract/assistants-shapes';
import { call, errorOf, startTestGateway, type CallOptions } from '../support/gateway';

// No functions/ module is imported statically: the gateway sets the environment before
// the handlers load; the stores are imported after it has started (same module instances).
let gw: LocalGateway;
let other: { key: string };
let runs: typeof import('../../functions/assistants/store/runs');
let steps: typeof import('../../functions/assistants/store/steps');
let messagesStore: typeof import('../../functions/assistants/store/messages');
let lifecycle: typeof import('../../functions/assistants/workflow/lifecycle');
const started: string[] = [];
const submitted: Array<{ runId: string; outputs: unknown }> = [];
const cancelled: string[] = [];
const RAW_SECRET = 'sk-raw-provider-secret-never-stored-42';

beforeAll(async () => {
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0' } });
  for (const slug of ['asst-openai', 'asst-claude']) {
    const created = await call(gw, 'POST', '/v1/providers', {
      body: { slug, provider: slug === 'asst-openai' ? 'openai' : 'anthropic', api_key: 'sk-managed', custom_host: 'http://127.0.0.1:9/v1' },
    });
    expect(created.status).toBe(200);
  }
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'Assistants other team' } });
  const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'other', workspace_id: ws.body.id, scopes: ['admin', 'gateway'] } });
  expect(key.status).toBe(200);
  other = { key: key.body.secret };
  runs = await import('../../functions/assistants/store/runs');
  steps = await import('../../functions/assistants/store/steps');
  messagesStore = await import('../../functions/assistants/store/messages');
  lifecycle = await import('../../functions/assistants/workflow/lifecycle');
  lifecycle.setLifecycleHooks({
    startRun: async (r) => void started.push(r.run.id),
    submitToolOutputs: async (r, outputs) => void submitted.push({ runId: r.run.id, outputs }),
    cancelRun: async (r) => void cancelled.push(r.run.id),
  });
});
afterAll(async () => {
  await gw?.stop();
});

/** The OpenAI SDK pointed at the gateway with a managed provider. */
const client = (headers: Record<string, string> = {}) =>
  new OpenAI({
    baseURL: gw.baseUrl,
    apiKey: 'unused-placeholder',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@asst-openai', ...headers },
  });
const raw = (method: string, path: string, opts: CallOptions = {}) =>
  call(gw, method, path, { ...opts, headers: { 'x-gateway-provider': '@asst-openai', ...opts.headers } });
type ApiError = InstanceType<typeof OpenAI.APIError>;
const failure = (p: Promise<unknown>) =>
  p.then(
    () => Promise.reject(new Error('expected a failure')),
    (e: unknown) => e as ApiError,
  );
const weather = { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };
const refOf = (threadId: string, runId: string) => ({ workspaceId: gw.workspaceId, threadId, runId });

let assistantId: string;
beforeAll(async () => {
  const a = await client().beta.assistants.create({ model: 'gpt-4o-mini', name: 'Helper', instructions: 'Be brief.', tools: [weather] });
  assistantId = a.id;
});

describe('assistants CRUD', () => {
  it('creates, retrieves, lists, modifies and deletes with OpenAI v2 shapes and the provider binding', async () => {
    const sdk = client();
    const created = await sdk.beta.assistants.create({
      model: 'gpt-4o',
      name: 'A',
      description: 'd',
      metadata: { team: 'x' },
      temperature: 0.5,
      response_format: { type: 'json_object' },
    });
    AssistantShape.parse(created);
    expect(created).toMatchObject({ model: 'gpt-4o', temperature: 0.5, top_p: 1, tools: [], metadata: { team: 'x' }, provider: '@asst-openai' });
    expect(await sdk.beta.assistants.retrieve(created.id)).toEqual(created);
    const updated = await sdk.beta.assistants.update(created.id, { name: 'B', instructions: 'New', tools: [weather], metadata: { team: 'y' } });
    AssistantShape.parse(updated);
    expect(updated).toMatchObject({ name: 'B', instructions: 'New', model: 'gpt-4o', tools: [weather], metadata: { team: 'y' } });
    const listed = await raw('GET', '/v1/assistants?limit=100');
    listShape(AssistantShape).parse(listed.body);
    expect(listed.body.data[0].id).toBe(created.id); // newest first
    deletedShape('assistant.deleted').parse(await sdk.beta.assistants.delete(created.id));
    expect(await failure(sdk.beta.assistants.retrieve(created.id))).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('binds the provider from the body (`provider: @slug`) or the virtual-key header, storing only the slug', async () => {
    const fromBody = await call(gw, 'POST', '/v1/assistants', { body: { model: 'claude-3-5-haiku', provider: '@asst-claude' } });
    expect(fromBody.status).toBe(200);
    expect(fromBody.body.provider).toBe('@asst-claude');
    const fromVk = await call(gw, 'POST', '/v1/assistants', { body: { model: 'm' }, headers: { 'x-gateway-virtual-key': 'asst-claude' } });
    expect(fromVk.body.provider).toBe('@asst-claude');
    const rebound = await raw('POST', `/v1/assistants/${fromVk.body.id}`, { body: { provider: '@asst-openai' } });
    expect(rebound.body.provider).toBe('@asst-openai');
    const unknown = await call(gw, 'POST', '/v1/assistants', { body: { model: 'm', provider: '@nope' } });
    expect(unknown.status).toBe(400);
    expect(errorOf(unknown)).toMatchObject({ code: 'provider_not_found', param: 'provider' });
  });
});

describe('credentials rule: the native implementation needs a managed provider; raw keys go to the provider', () => {
  it('sends raw provider keys to the provider’s own API (the proxy), refuses per-request settings without a provider, and stores nothing', async () => {
    // A raw key is the provider's own Assistants API: proxied (here to a closed port: 502).
    const rawHeaders = { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': 'http://127.0.0.1:1/v1', authorization: `Bearer ${RAW_SECRET}` };
    for (const [method, path, body] of [
      ['POST', '/v1/assistants', { model: 'gpt-4o' }],
      ['POST', '/v1/threads', {}],
      ['POST', '/v1/threads/runs', { assistant_id: 'asst_x' }],
      ['GET', '/v1/assistants', undefined],
    ] as const) {
      const res = await call(gw, method, path, { body, headers: rawHeaders });
      expect(res.status, path).toBe(502);
      expect(errorOf(res).message).not.toContain(RAW_SECRET);
    }
    const host = await raw('POST', '/v1/assistants', { body: { model: 'm' }, headers: { 'x-gateway-custom-host': 'http://127.0.0.1:1' } });
    expect(errorOf(host)).toMatchObject({ code: 'managed_provider_required', param: 'x-gateway-custom-host' });
    const none = await call(gw, 'POST', '/v1/assistants', { body: { model: 'm' } });
    expect(errorOf(none)).toMatchObject({ code: 'managed_provider_required' });
    expect(errorOf(none).message).toContain('managed provider');
    const ddb = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1', endpoint: process.env.AWS_ENDPOINT_URL_DYNAMODB }));
    for (const table of [process.env.TABLE_CONTROL, process.env.TABLE_THREADS]) {
      const items = await ddb.send(new ScanCommand({ TableName: table }));
      expect(JSON.stringify(items.Items)).not.toContain(RAW_SECRET);
    }
    ddb.destroy();
  });

  it('accepts Vendor-Beta / OpenAI-Beta assistants=v2 without requiring it', async () => {
    const variants: Array<Record<string, string>> = [{}, { 'Vendor-Beta': 'assistants=v2' }, { 'OpenAI-Beta': 'assistants=v2' }];
    for (const headers of variants) {
      expect((await raw('POST', '/v1/threads', { body: {}, headers })).status).toBe(200);
    }
  });
});

describe('threads and messages', () => {
  it('creates a thread with messages (string and array content), modifies and deletes it', async () => {
    const sdk = client();
    const thread = await sdk.beta.threads.create({
      metadata: { purpose: 'test' },
      messages: [
        { role: 'user', content: 'Hello' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look at this' },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } },
            { type: 'image_file', image_file: { file_id: 'file-abc' } },
          ],
        },
      ],
    });
    ThreadShape.parse(thread);
    expect(thread.metadata).toEqual({ purpose: 'test' });
    const list = await raw('GET', `/v1/threads/${thread.id}/messages?order=asc`);
    listShape(MessageShape).parse(list.body);
    const [first, second] = list.body.data;
    expect(first).toMatchObject({ role: 'user', status: 'completed', assistant_id: null, run_id: null, attachments: [], metadata: {} });
    expect(first.content).toEqual([{ type: 'text', text: { value: 'Hello', annotations: [] } }]);
    expect(second.content).toEqual([
      { type: 'text', text: { value: 'Look at this', annotations: [] } },
      { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } },
      { type: 'image_file', image_file: { file_id: 'file-abc', detail: 'auto' } },
    ]);
    expect(await sdk.beta.threads.retrieve(thread.id)).toEqual(thread);
    const updated = await sdk.beta.threads.update(thread.id, { metadata: { purpose: 'changed' } });
    expect(updated.metadata).toEqual({ purpose: 'changed' });
    deletedShape('thread.deleted').parse(await sdk.beta.threads.delete(thread.id));
    expect(await failure(sdk.beta.threads.retrieve(thread.id))).toBeInstanceOf(OpenAI.NotFoundError);
    expect((await raw('GET', `/v1/threads/${thread.id}/messages`)).status).toBe(404);
    expect((await raw('GET', `/v1/threads/${thread.id}/messages/${first.id}`)).status).toBe(404);
    // The thread's items went with it.
    expect(await messagesStore.getMessage(gw.workspaceId, thread.id, second.id)).toBeUndefined();
  });

  it('creates, retrieves, modifies and deletes messages through the SDK', async () => {
    const sdk = client();
    const thread = await sdk.beta.threads.create();
    const msg = await sdk.beta.threads.messages.create(thread.id, { role: 'user', content: 'Hi there', metadata: { k: 'v' } });
    MessageShape.parse(msg);
    expect(msg).toMatchObject({
      thread_id: thread.id,
      role: 'user',
      status: 'completed',
      completed_at: msg.created_at,
      incomplete_at: null,
      incomplete_details: null,
    });
    expect(await sdk.beta.threads.messages.retrieve(msg.id, { thread_id: thread.id })).toEqual(msg);
    const updated = await sdk.beta.threads.messages.update(msg.id, { thread_id: thread.id, metadata: { k: 'w' } });
    expect(updated.metadata).toEqual({ k: 'w' });
    deletedShape('thread.message.deleted').parse(await sdk.beta.threads.messages.delete(msg.id, { thread_id: thread.id }));
    expect(await failure(sdk.beta.threads.messages.retrieve(msg.id, { thread_id: thread.id }))).toBeInstanceOf(OpenAI.NotFoundError);
    expect(await failure(sdk.beta.threads.messages.create('thread_missing', { role: 'user', content: 'x' }))).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('lists messages with limit, order and after/before cursors in both orders', async () => {
    const sdk = client();
    const thread = await sdk.beta.threads.create();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await sdk.beta.threads.messages.create(thread.id, { role: 'user', content: `m${i}` })).id);
    const page = async (query: string) => {
      const res = await raw('GET', `/v1/threads/${thread.id}/messages?${query}`);
      expect(res.status).toBe(200);
      listShape(MessageShape).parse(res.body);
      return { ids: res.body.data.map((m: { id: string }) => m.id), more: res.body.has_more, first: res.body.first_id, last: res.body.last_id };
    };
    const desc = [...ids].reverse();
    const d1 = await page('limit=3');
    expect(d1).toEqual({ ids: desc.slice(0, 3), more: true, first: desc[0], last: desc[2] });
    expect(await page(`limit=3&after=${d1.last}`)).toMatchObject({ ids: desc.slice(3, 6), more: true });
    expect(await page(`limit=3&after=${desc[5]}`)).toMatchObject({ ids: desc.slice(6), more: false });
    expect(await page(`limit=2&before=${desc[3]}`)).toMatchObject({ ids: desc.slice(1, 3), more: true });
    expect(await page(`limit=3&order=asc`)).toMatchObject({ ids: ids.slice(0, 3), more: true });
    expect(await page(`limit=3&order=asc&after=${ids[2]}`)).toMatchObject({ ids: ids.slice(3, 6), more: true });
    expect(await page(`limit=2&order=asc&before=${ids[3]}`)).toMatchObject({ ids: ids.slice(1, 3), more: true });
    expect(await page(`limit=5&order=asc&before=${ids[2]}`)).toMatchObject({ ids: ids.slice(0, 2), more: false });
    expect((await page('')).ids).toEqual(desc); // default: desc, 20
    const all: string[] = [];
    for await (const m of sdk.beta.threads.messages.list(thread.id, { limit: 2, order: 'asc' })) all.push(m.id);
    expect(all).toEqual(ids);
  });

  it('filters messages by run_id', async () => {
    const sdk = client();
    const thread = await sdk.beta.threads.create({ messages: [{ role: 'user', content: 'question' }] });
    const written = await messagesStore.addMessage(
      gw.workspaceId,
      thread.id,
      {
        role: 'assistant',
        content: [{ type: 'text', text: { value: 'answer', annotations: [] } }],
        attachments: null,
        metadata: {},
        assistant_id: assistantId,
        run_id: 'run_fake1',
      },
      { whenIdle: false },
    );
    expect('message' in written).toBe(true);
    const filtered = await raw('GET', `/v1/threads/${thread.id}/messages?run_id=run_fake1`);
    listShape(MessageShape).parse(filtered.body);
    expect(filtered.body.data.map((m: { run_id: string }) => m.run_id)).toEqual(['run_fake1']);
    expect(filtered.body.data[0]).toMatchObject({ role: 'assistant', assistant_id: assistantId });
    expect((await raw('GET', `/v1/threads/${thread.id}/messages?run_id=run_other`)).body.data).toEqual([]);
    expect((await raw('GET', `/v1/threads/${thread.id}/messages`)).body.data).toHaveLength(2);
  });
});

describe('runs: record layer and routes', () => {
  it('creates a queued run with the defaults and hands it to the lifecycle hook', async () => {
    const sdk = client();
    const thread = await sdk.beta.threads.create({ messages: [{ role: 'user', content: 'weather?' }] });
    const run = await sdk.beta.threads.runs.create(thread.id, { assistant_id: assistantId });
    RunShape.parse(run);
    expect(run).toMatchObject({
      status: 'queued',
      thread_id: thread.id,
      assistant_id: assistantId,
      model: 'gpt-4o-mini',
      instructions: 'Be brief.',
      tools: [weather],
      metadata: {},
      usage: null,
      required_action: null,
      last_error: null,
      started_at: null,
      cancelled_at: null,
      failed_at: null,
      completed_at: null,
      incomplete_details: null,
      temperature: 1,
      top_p: 1,
      max_prompt_tokens: null,
      max_completion_tokens: null,
      truncation_strategy: { type: 'auto', last_messages: null },
      tool_choice: 'auto',
      parallel_tool_calls: true,
      response_format: 'auto',
    });
    expect(run.expires_at).toBe(run.created_at + 600);
    expect(started).toContain(run.id);
    const record = await runs.getRun(refOf(thread.id, run.id));
    expect(record).toMatchObject({ provider: 'asst-openai', workspaceId: gw.workspaceId });
    expect(await sdk.beta.threads.runs.retrieve(run.id, { thread_id: thread.id })).toEqual(run);
    const updated = await sdk.beta.threads.runs.update(run.id, { thread_id: thread.id, metadata: { tag: 'x' } });
    expect(updated.metadata).toEqual({ tag: 'x' });
    // The request's managed provider wins over the assistant's binding.
    const thread2 = await sdk.beta.threads.create();
    const viaClaude = await client({ 'x-gateway-provider': '@asst-claude' }).beta.threads.runs.create(thread2.id, { assistant_id: assistantId });
    expect((await runs.getRun(refOf(thread2.id, viaClaude.id)))?.provider).toBe('asst-claude');
  });

  it('applies overrides, additional instructions and additional messages atomically', async () => {
    const sdk = client();
    const thread = await sdk.beta.threads.create();
    const run = await sdk.beta.threads.runs.create(thread.id, {
      assistant_id: assistantId,
      model: 'gpt-4o',
      additional_instructions: 'Use metric units.',
      additional_messages: [{ role: 'user', content: 'in Paris' }],
      temperature: 0.2,
      top_p: 0.9,
      max_prompt_tokens: 1000,
      max_completion_tokens: 256,
      truncation_strategy: { type: 'last_messages', last_messages: 5 },
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
      response_format: { type: 'json_object' },
      metadata: { a: '1' },
    });
    RunShape.parse(run);
    expect(run).toMatchObject({
      model: 'gpt-4o',
      instructions: 'Be brief.\n\nUse metric units.',
      temperature: 0.2,
      top_p: 0.9,
      max_prompt_tokens: 1000,
      max_completion_tokens: 256,
      truncation_strategy: { type: 'last_messages', last_messages: 5 },
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
      response_format: { type: 'json_object' },
    });
    const msgs = await sdk.beta.threads.messages.list(thread.id);
    expect(msgs.data.map((m) => (m.content[0] as { text: { value: string } }).text.value)).toEqual(['in Paris']);
    const badChoice = await failure(
      sdk.beta.threads.runs.create((await sdk.beta.threads.create()).id, {
        assistant_id: assistantId,
        tool_choice: { type: 'function', function: { name: 'nope' } },
      }),
    );
    expect(badChoice).toMatchObject({ status: 400, param: 'tool_choice.function.name' });
    expect(await failure(sdk.beta.threads.runs.create(thread.id, { assistant_id: 'asst_missing' }))).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('creates a thread and a run in one call', async () => {
    const sdk = client();
    const run = await sdk.beta.threads.createAndRun({
      assistant_id: assistantId,
      thread: {
        messages: [
          { role: 'user', content: 'first' },
          { role: 'user', content: 'second' },
        ],
        metadata: { via: 'createAndRun' },
      },
      instructions: 'Override.',
    });
    RunShape.parse(run);
    expect(run).toMatchObject({ status: 'queued', instructions: 'Override.' });
    expect(started).toContain(run.id);
    const thread = await sdk.beta.threads.retrieve(run.thread_id);
    expect(thread.metadata).toEqual({ via: 'createAndRun' });
    const msgs = await sdk.beta.threads.messages.list(run.thread_id, { order: 'asc' });
    expect(msgs.data.map((m) => (m.content[0] as { text: { value: string } }).text.value)).toEqual(['first', 'second']);
    // The new thread is already claimed by its run.
    expect(await failure(sdk.beta.threads.runs.create(run.thread_id, { assistant_id: assistantId }))).toBeInstanceOf(OpenAI.BadRequestError);
  });

  it('lets exactly one of 5 concurrent runs on a thread win; the others get 400 (as on OpenAI: not retried by the SDK)', async () => {
    const sdk = client();
    const thread = await sdk.beta.threads.create();
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => sdk.beta.threads.runs.create(thread.id, { assistant_id: assistantId })));
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(4);
    for (const r of lost) {
      expect(r.reason).toBeInstanceOf(OpenAI.BadRequestError);
      expect((r.reason as ApiError).type).toBe('invalid_request_error');
    }
    const listed = await sdk.beta.threads.runs.list(thread.id);
    expect(listed.data).toHaveLength(1);
    // While the run is active the thread takes no new messages either.
    const busy = await failure(sdk.beta.threads.messages.create(thread.id, { role: 'user', content: 'x' }));
    expect(busy).toBeInstanceOf(OpenAI.BadRequestError);
  });

  it('cancels queued / in_progress / requires_action runs into cancelling; finishing releases the thread', async () => {
    const sdk = client();
    const thread = await sdk.beta.threads.create();
    const run = await sdk.beta.threads.runs.create(thread.id, { assistant_id: assistantId });
    const cancelling = await sdk.beta.threads.runs.cancel(run.id, { thread_id: thread.id });
    RunShape.parse(cancelling);
    expect(cancelling.status).toBe('cancelling');
    expect(cancelled).toContain(run.id);
    const again = await failure(sdk.beta.threads.runs.cancel(run.id, { thread_id: thread.id }));
    expect(again).toBeInstanceOf(OpenAI.BadRequestError);
    expect(again.message).toContain('cancelling');
    // Still active: the lifecycle finishes it.
    expect(await failure(sdk.beta.threads.runs.create(thread.id, { assistant_id: assistantId }))).toBeInstanceOf(OpenAI.BadRequestError);
    const done = await runs.transitionRun(refOf(thread.id, run.id), ['cancelling'], { status: 'cancelled' });
    expect(done?.run).toMatchObject({ status: 'cancelled', expires_at: null });
    expect(done?.run.cancelled_at).toBeGreaterThanOrEqual(run.created_at);
    RunShape.parse(done?.run);
    expect(await failure(sdk.beta.threads.runs.cancel(run.id, { thread_id: thread.id }))).toBeInstanceOf(OpenAI.BadRequestError);
    const next = await sdk.beta.threads.runs.create(thread.id, { assistant_id: assistantId });
    const ref = refOf(thread.id, next.id);
    await runs.transitionRun(ref, ['queued'], { status: 'in_progress', started_at: next.created_at });
    expect((await sdk.beta.threads.runs.cancel(next.id, { thread_id: thread.id })).status).toBe('cancelling');
    expect(await failure(sdk.beta.threads.runs.cancel('run_missing', { thread_id: thread.id }))).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('moves through requires_action and submit_tool_outputs; terminal states never change', async () => {
    const sdk = client();
    const thread = await sdk.beta.threads.create({ messages: [{ role: 'user', content: 'weather in Oslo?' }] });
    const run = await sdk.beta.threads.runs.create(thread.id, { assistant_id: assistantId });
    const ref = refOf(thread.id, run.id);
    const early = await failure(
      sdk.beta.threads.runs.submitToolOutputs(run.id, { thread_id: thread.id, tool_outputs: [{ tool_call_id: 'call_1', output: 'x' }] }),
    );
    expect(early).toBeInstanceOf(OpenAI.BadRequestError);
    expect((await runs.transitionRun(ref, ['queued'], { status: 'in_progress', started_at: run.created_at }))?.run.status).toBe('in_progress');
    expect(await runs.transitionRun(ref, ['queued'], { status: 'in_progress' })).toBeUndefined(); // duplicate delivery: no-op
    const toolCalls = [{ id: 'call_1', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }];
    const waiting = await runs.transitionRun(ref, ['in_progress'], {
      status: 'requires_action',
      required_action: { type: 'submit_tool_outputs', submit_tool_outputs: { tool_calls: toolCalls } },
    });
    RunShape.parse(waiting?.run);
    const step = await steps.createStep(ref, {
      assistantId,
      details: { type: 'tool_calls', tool_calls: toolCalls.map((c) => ({ ...c, function: { ...c.function, output: null } })) },
    });
    const unknownId = await failure(
      sdk.beta.threads.runs.submitToolOutputs(run.id, { thread_id: thread.id, tool_outputs: [{ tool_call_id: 'call_x', output: 'x' }] }),
    );
    expect(unknownId).toMatchObject({ status: 400, param: 'tool_outputs[0].tool_call_id' });
    const afterSubmit = await sdk.beta.threads.runs.submitToolOutputs(run.id, {
      thread_id: thread.id,
      tool_outputs: [{ tool_call_id: 'call_1', output: '12C' }],
    });
    RunShape.parse(afterSubmit);
    expect(submitted).toContainEqual({ runId: run.id, outputs: [{ tool_call_id: 'call_1', output: '12C' }] });
    await steps.transitionStep(ref, step.id, { status: 'completed', usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 } });
    const resumed = await runs.transitionRun(ref, ['requires_action'], { status: 'in_progress' });
    expect(resumed?.run.required_action).toBeNull();
    const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
    const completed = await runs.transitionRun(ref, ['in_progress'], { status: 'completed', usage });
    RunShape.parse(completed?.run);
    expect(completed?.run).toMatchObject({ status: 'completed', usage, expires_at: null, started_at: run.created_at });
    // Terminal: nothing moves it, even when `from` names the terminal state itself.
    expect(await runs.transitionRun(ref, ['queued', 'in_progress', 'requires_action', 'cancelling'], { status: 'failed' })).toBeUndefined();
    expect(await runs.transitionRun(ref, ['completed'], { status: 'expired' })).toBeUndefined();
    expect(await runs.transitionRun(ref, ['completed', 'in_progress'], { status: 'in_progress' })).toBeUndefined();
    expect(await failure(sdk.beta.threads.runs.cancel(run.id, { thread_id: thread.id }))).toBeInstanceOf(OpenAI.BadRequestError);
    expect(await sdk.beta.threads.runs.retrieve(run.id, { thread_id: thread.id })).toEqual(completed?.run);
    // The claim was released with the terminal transition.
    expect((await sdk.beta.threads.runs.create(thread.id, { assistant_id: assistantId })).status).toBe('queued');
    // Steps through the SDK.
    const stepList = await sdk.beta.threads.runs.steps.list(run.id, { thread_id: thread.id });
    listShape(RunStepShape).parse((await raw('GET', `/v1/threads/${thread.id}/runs/${run.id}/steps`)).body);
    expect(stepList.data.map((s) => s.id)).toEqual([step.id]);
    const one = await sdk.beta.threads.runs.steps.retrieve(step.id, { thread_id: thread.id, run_id: run.id });
    RunStepShape.parse(one);
    expect(one).toMatchObject({ status: 'completed', type: 'tool_calls', usage: { total_tokens: 8 } });
    expect(await failure(sdk.beta.threads.runs.steps.retrieve('step_missing', { thread_id: thread.id, run_id: run.id }))).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('lists runs with cursors in both orders', async () => {
    const sdk = client();
    const thread = await sdk.beta.threads.create();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const run = await sdk.beta.threads.runs.create(thread.id, { assistant_id: assistantId });
      ids.push(run.id);
      await runs.transitionRun(refOf(thread.id, run.id), ['queued'], { status: 'failed', last_error: { code: 'server_error', message: 'boom' } });
    }
    const res = await raw('GET', `/v1/threads/${thread.id}/runs?limit=2`);
    listShape(RunShape).parse(res.body);
    expect(res.body.data.map((r: { id: string }) => r.id)).toEqual([ids[3], ids[2]]);
    expect(res.body.data[0]).toMatchObject({ status: 'failed', last_error: { code: 'server_error', message: 'boom' } });
    expect(res.body.data[0].failed_at).toEqual(expect.any(Number));
    const next = await raw('GET', `/v1/threads/${thread.id}/runs?limit=2&after=${ids[2]}`);
    expect(next.body).toMatchObject({ has_more: false, first_id: ids[1], last_id: ids[0] });
    const back = await raw('GET', `/v1/threads/${thread.id}/runs?limit=1&before=${ids[1]}`);
    expect(back.body.data.map((r: { id: string }) => r.id)).toEqual([ids[2]]);
    const asc = await raw('GET', `/v1/threads/${thread.id}/runs?order=asc&after=${ids[0]}&before=${ids[3]}`);
    expect(asc.body.data.map((r: { id: string }) => r.id)).toEqual([ids[1], ids[2]]);
    const all: string[] = [];
    for await (const r of sdk.beta.threads.runs.list(thread.id, { limit: 1, order: 'asc' })) all.push(r.id);
    expect(all).toEqual(ids);
  });

  it('reclaims a thread whose active run is past expires_at (lost worker)', async () => {
    const sdk = client();
    const thread = await sdk.beta.threads.create();
    const run = await sdk.beta.threads.runs.create(thread.id, { assistant_id: assistantId });
    const ref = refOf(thread.id, run.id);
    await runs.transitionRun(ref, ['queued'], { status: 'queued', expires_at: run.created_at - 1 });
    const next = await sdk.beta.threads.runs.create(thread.id, { assistant_id: assistantId });
    expect(next.status).toBe('queued');
    expect((await runs.getRun(ref))?.run.status).toBe('expired');
  });
});

describe('limits and unsupported tools: 400s naming the field', () => {
  let threadId: string;
  beforeAll(async () => {
    threadId = (await client().beta.threads.create()).id;
  });

  const expect400 = async (method: string, path: string, body: unknown, param: string, fragment = param) => {
    const res = await raw(method, path, { body });
    expect(res.status, `${method} ${path} ${String(JSON.stringify(body)).slice(0, 200)}`).toBe(400);
    const err = errorOf(res);
    expect(err.type).toBe('invalid_request_error');
    expect(err.param).toBe(param);
    expect(err.message).toContain(fragment);
  };

  it('limits metadata to 16 pairs, 64-character keys and 512-character values', async () => {
    const seventeen = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    const sixteen = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${'x'.repeat(60)}${i}`.slice(0, 64), 'v'.repeat(512)]));
    for (const path of ['/v1/threads', `/v1/threads/${threadId}/messages`, '/v1/assistants']) {
      const base = path.endsWith('messages') ? { role: 'user', content: 'x' } : path === '/v1/assistants' ? { model: 'm' } : {};
      await expect400('POST', path, { ...base, metadata: seventeen }, 'metadata', '16');
      await expect400('POST', path, { ...base, metadata: { ['k'.repeat(65)]: 'v' } }, 'metadata', '64');
      await expect400('POST', path, { ...base, metadata: { k: 'v'.repeat(513) } }, 'metadata.k', '512');
      expect((await raw('POST', path, { body: { ...base, metadata: sixteen } })).status).toBe(200);
    }
    await expect400('POST', `/v1/threads/${threadId}/runs`, { assistant_id: assistantId, metadata: seventeen }, 'metadata', '16');
  });

  it('limits tools, token limits, temperature, top_p and list limit', async () => {
    const runs = `/v1/threads/${threadId}/runs`;
    const tools = Array.from({ length: 21 }, (_, i) => ({ type: 'function', function: { name: `f${i}` } }));
    await expect400('POST', runs, { assistant_id: assistantId, tools }, 'tools', '20');
    await expect400('POST', '/v1/assistants', { model: 'm', tools }, 'tools', '20');
    await expect400('POST', runs, { assistant_id: assistantId, max_prompt_tokens: 255 }, 'max_prompt_tokens', '256');
    await expect400('POST', runs, { assistant_id: assistantId, max_completion_tokens: 100 }, 'max_completion_tokens', '256');
    await expect400('POST', runs, { assistant_id: assistantId, temperature: 2.1 }, 'temperature');
    await expect400('POST', runs, { assistant_id: assistantId, temperature: -0.1 }, 'temperature');
    await expect400('POST', runs, { assistant_id: assistantId, top_p: 1.01 }, 'top_p');
    await expect400('POST', '/v1/threads/runs', { assistant_id: assistantId, top_p: -1 }, 'top_p');
    await expect400('POST', runs, { assistant_id: assistantId, truncation_strategy: { type: 'last_messages' } }, 'truncation_strategy.last_messages');
    for (const list of [runs, `/v1/threads/${threadId}/messages`, '/v1/assistants']) {
      await expect400('GET', `${list}?limit=0`, undefined, 'limit', '1 to 100');
      await expect400('GET', `${list}?limit=101`, undefined, 'limit', '1 to 100');
      await expect400('GET', `${list}?order=sideways`, undefined, 'order');
      expect((await raw('GET', `${list}?limit=100`)).status).toBe(200);
    }
    // Nothing above created a run: the thread is still free.
    expect((await raw('GET', runs)).body.data).toEqual([]);
  });

  it('refuses code_interpreter and file_search wherever they are named, never dropping them', async () => {
    const runs = `/v1/threads/${threadId}/runs`;
    await expect400('POST', '/v1/assistants', { model: 'm', tools: [weather, { type: 'code_interpreter' }] }, 'tools[1].type', 'code_interpreter');
    await expect400(
      'POST',
      '/v1/assistants',
      { model: 'm', tool_resources: { file_search: { vector_store_ids: ['vs_1'] } } },
      'tool_resources.file_search',
      'file_search',
    );
    await expect400('POST', runs, { assistant_id: assistantId, tools: [{ type: 'file_search' }] }, 'tools[0].type', 'file_search');
    await expect400('POST', runs, { assistant_id: assistantId, tool_choice: { type: 'file_search' } }, 'tool_choice.type', 'file_search');
    await expect400('POST', '/v1/threads', { tool_resources: { code_interpreter: { file_ids: [] } } }, 'tool_resources.code_interpreter', 'code_interpreter');
    await expect400(
      'POST',
      `/v1/threads/${threadId}/messages`,
      { role: 'user', content: 'x', attachments: [{ file_id: 'file-1', tools: [{ type: 'code_interpreter' }] }] },
      'attachments[0].tools[0].type',
      'code_interpreter',
    );
    await expect400(
      'POST',
      '/v1/threads/runs',
      { assistant_id: assistantId, thread: { messages: [{ role: 'user', content: 'x', attachments: [{ file_id: 'f', tools: [{ type: 'file_search' }] }] }] } },
      'thread.messages[0].attachments[0].tools[0].type',
      'file_search',
    );
    const sdkErr = await failure(client().beta.assistants.create({ model: 'm', tools: [{ type: 'code_interpreter' }] }));
    expect(sdkErr).toBeInstanceOf(OpenAI.BadRequestError);
    expect(sdkErr.message).toContain('code_interpreter');
  });

  it('validates message content and submit_tool_outputs bodies', async () => {
    await expect400('POST', `/v1/threads/${threadId}/messages`, { role: 'system', content: 'x' }, 'role');
    await expect400('POST', `/v1/threads/${threadId}/messages`, { role: 'user' }, 'content');
    await expect400('POST', `/v1/threads/${threadId}/messages`, { role: 'user', content: [] }, 'content');
    await expect400('POST', `/v1/threads/${threadId}/messages`, { role: 'user', content: 'x', extra: 1 }, 'extra');
    const sdk = client();
    const thread = await sdk.beta.threads.create();
    const run = await sdk.beta.threads.runs.create(thread.id, { assistant_id: assistantId });
    await expect400('POST', `/v1/threads/${thread.id}/runs/${run.id}/submit_tool_outputs`, { tool_outputs: [{ output: 'x' }] }, 'tool_outputs[0].tool_call_id');
    await expect400('POST', `/v1/threads/${thread.id}/runs/${run.id}/submit_tool_outputs`, {}, 'tool_outputs');
  });
});

describe('workspace isolation', () => {
  it("another workspace's key sees none of these resources (404)", async () => {
    const sdk = client();
    const thread = await sdk.beta.threads.create({ messages: [{ role: 'user', content: 'private' }] });
    const msg = (await sdk.beta.threads.messages.list(thread.id)).data[0]!;
    const run = await sdk.beta.threads.runs.create(thread.id, { assistant_id: assistantId });
    const theirs = client({ 'x-gateway-api-key': other.key, 'x-gateway-provider': '' });
    const attempts: Array<() => Promise<unknown>> = [
      () => theirs.beta.assistants.retrieve(assistantId),
      () => theirs.beta.assistants.update(assistantId, { name: 'stolen' }),
      () => theirs.beta.assistants.delete(assistantId),
      () => theirs.beta.threads.retrieve(thread.id),
      () => theirs.beta.threads.update(thread.id, { metadata: { x: 'y' } }),
      () => theirs.beta.threads.delete(thread.id),
      () => theirs.beta.threads.messages.list(thread.id),
      () => theirs.beta.threads.messages.retrieve(msg.id, { thread_id: thread.id }),
      () => theirs.beta.threads.messages.create(thread.id, { role: 'user', content: 'x' }),
      () => theirs.beta.threads.runs.list(thread.id),
      () => theirs.beta.threads.runs.retrieve(run.id, { thread_id: thread.id }),
      () => theirs.beta.threads.runs.cancel(run.id, { thread_id: thread.id }),
      () => theirs.beta.threads.runs.steps.list(run.id, { thread_id: thread.id }),
    ];
    for (const attempt of attempts) expect(await failure(attempt())).toBeInstanceOf(OpenAI.NotFoundError);
    const theirList = await call(gw, 'GET', '/v1/assistants', { key: other.key });
    expect(theirList.body.data).toEqual([]);
    // Untouched on our side.
    expect((await sdk.beta.threads.runs.retrieve(run.id, { thread_id: thread.id })).status).toBe('queued');
    expect((await sdk.beta.assistants.retrieve(assistantId)).name).toBe('Helper');
  });
});
