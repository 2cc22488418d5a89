import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import * as z from 'zod';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, errorOf, startTestGateway, type CallResult } from '../support/gateway';

// No functions/ module is imported statically: the gateway sets the environment first.
let gw: LocalGateway;
let fake: FakeServer;
/** A second workspace of the same organisation, with its own admin+gateway key. */
let other: { workspaceId: string; key: string };
const MANAGED_KEY = 'sk-managed-prompt-provider-secret';
const CALLER_KEY = 'sk-caller-own-provider-key';

// ---- response shapes, written from the spec's tables -----------------------------------------

const uuid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);

/** Prompt update result (also what create returns). */
const updateResultSchema = z.strictObject({ id: uuid, slug: z.string().min(1), prompt_version_id: uuid });

/** Rendered prompt: `data` is a chat-completion request object; every field optional as shown. */
const renderedSchema = z.strictObject({
  success: z.boolean(),
  data: z.strictObject({
    messages: z.optional(z.array(z.strictObject({ content: z.string(), role: z.string(), name: z.optional(z.string()) }))),
    model: z.optional(z.string()),
    frequency_penalty: z.optional(z.number()),
    presence_penalty: z.optional(z.number()),
    temperature: z.optional(z.number()),
    top_p: z.optional(z.number()),
    logit_bias: z.optional(z.nullable(z.record(z.string(), z.unknown()))),
    logprobs: z.optional(z.boolean()),
    top_logprobs: z.optional(z.int()),
    max_tokens: z.optional(z.int()),
    max_completion_tokens: z.optional(z.int()),
    n: z.optional(z.int()),
    response_format: z.optional(z.looseObject({ type: z.string() })),
    seed: z.optional(z.int()),
    stop: z.optional(z.string()),
    stream: z.optional(z.boolean()),
    stream_options: z.optional(z.nullable(z.record(z.string(), z.unknown()))),
    thinking: z.optional(z.strictObject({ type: z.string(), budget_tokens: z.int() })),
    tools: z.optional(
      z.array(
        z.strictObject({
          type: z.literal('function'),
          function: z.strictObject({
            name: z.string(),
            description: z.optional(z.string()),
            parameters: z.optional(z.record(z.string(), z.unknown())),
            strict: z.optional(z.boolean()),
          }),
        }),
      ),
    ),
    tool_choice: z.optional(z.union([z.string(), z.record(z.string(), z.unknown())])),
    parallel_tool_calls: z.optional(z.boolean()),
    user: z.optional(z.string()),
    function_call: z.optional(z.union([z.string(), z.record(z.string(), z.unknown())])),
    functions: z.optional(
      z.array(z.strictObject({ name: z.string(), description: z.optional(z.string()), parameters: z.optional(z.record(z.string(), z.unknown())) })),
    ),
  }),
});

/** Chat-completion object (fields the table lists; which are required is not shown, so all listed ones are checked when present). */
const chatCompletionSchema = z.looseObject({
  id: z.string(),
  choices: z.array(
    z.looseObject({
      finish_reason: z.string(),
      index: z.int(),
      message: z.looseObject({
        content: z.nullable(z.string()),
        role: z.literal('assistant'),
        tool_calls: z.optional(
          z.array(z.looseObject({ id: z.string(), type: z.literal('function'), function: z.looseObject({ name: z.string(), arguments: z.string() }) })),
        ),
        function_call: z.optional(z.looseObject({ arguments: z.string(), name: z.string() })),
        content_blocks: z.optional(z.array(z.looseObject({ type: z.literal('text'), text: z.string() }))),
      }),
      logprobs: z.optional(z.nullable(z.looseObject({ content: z.nullable(z.array(z.looseObject({ token: z.string(), logprob: z.number() }))) }))),
    }),
  ),
  created: z.int(),
  model: z.string(),
  object: z.literal('chat.completion'),
  system_fingerprint: z.optional(z.nullable(z.string())),
  usage: z.looseObject({
    completion_tokens: z.int(),
    prompt_tokens: z.int(),
    total_tokens: z.int(),
    completion_tokens_details: z.optional(
      z.looseObject({
        reasoning_tokens: z.optional(z.int()),
        accepted_prediction_tokens: z.optional(z.int()),
        rejected_prediction_tokens: z.optional(z.int()),
      }),
    ),
    prompt_tokens_details: z.optional(z.looseObject({ cached_tokens: z.optional(z.int()) })),
  }),
});

/** Prompt completion response. */
const completionResponseSchema = z.strictObject({
  status: z.string(),
  headers: z.record(z.string(), z.string()),
  body: chatCompletionSchema,
});

const chunkSchema = z.looseObject({
  id: z.string(),
  object: z.literal('chat.completion.chunk'),
  created: z.int(),
  model: z.string(),
  choices: z.array(z.looseObject({ index: z.int(), delta: z.looseObject({}), finish_reason: z.nullable(z.string()) })),
});

// ---- helpers -----------------------------------------------------------------------------------

beforeAll(async () => {
  fake = await startOpenAIFake();
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0' } });
  const provider = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'fake-openai', provider: 'openai', api_key: MANAGED_KEY, custom_host: `${fake.url}/v1` },
  });
  expect(provider.status).toBe(200);
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'Prompt isolation team' } });
  expect(ws.status).toBe(200);
  const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'other', workspace_id: ws.body.id, scopes: ['admin', 'gateway'] } });
  expect(key.status).toBe(200);
  other = { workspaceId: ws.body.id, key: key.body.secret };
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});
beforeEach(() => fake.reset());

let counter = 0;
const uniqueName = (base: string) => `${base} ${++counter} ${Date.now().toString(36)}`;

const messagesTemplate = (user: string, system = 'You are a helpful assistant.') =>
  JSON.stringify([
    { role: 'system', content: system },
    { role: 'user', content: user },
  ]);

interface Created {
  id: string;
  slug: string;
  prompt_version_id: string;
}

async function createPrompt(body: Record<string, unknown> = {}, key?: string): Promise<Created> {
  const res = await call(gw, 'POST', '/v1/prompts', {
    key,
    body: {
      name: uniqueName('Greeting'),
      string: messagesTemplate('Hello {{name}}'),
      parameters: { temperature: 0.7, max_tokens: 100 },
      model: 'gpt-4o-mini',
      virtual_key: 'fake-openai',
      ...body,
    },
  });
  expect(res.status, res.text).toBe(200);
  return updateResultSchema.parse(res.body);
}

const renderOf = async (ref: string, body: Record<string, unknown>, key?: string) =>
  call(gw, 'POST', `/v1/prompts/${encodeURIComponent(ref)}/render`, { key, body });

async function renderedUser(ref: string, variables: Record<string, unknown> = { name: 'Ada' }): Promise<string> {
  const res = await renderOf(ref, { variables });
  expect(res.status, res.text).toBe(200);
  const parsed = renderedSchema.parse(res.body);
  return parsed.data.messages!.at(-1)!.content;
}

function expectError(res: CallResult, status: number, fields: Record<string, unknown>) {
  expect(res.status, res.text).toBe(status);
  expect(errorOf(res)).toMatchObject(fields);
}

async function logRecordsFor(traceId: string): Promise<any[]> {
  let records: any[] = [];
  for (let i = 0; i < 100 && !records.length; i++) {
    records = (await call(gw, 'GET', `/v1/logs?trace_id=${traceId}`)).body.data;
    if (!records.length) await new Promise((r) => setTimeout(r, 50));
  }
  return records;
}

function sseFrames(text: string): string[] {
  return text
    .split('\n\n')
    .map((f) => f.trim())
    .filter(Boolean)
    .map((f) =>
      f
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n'),
    );
}

// ---- tests -------------------------------------------------------------------------------------

describe('create and read', () => {
  it('creates a template whose first version is Published, with a slug derived from the name', async () => {
    const name = `Support Reply Ünïcode ${Date.now().toString(36)}`;
    const created = await createPrompt({ name, collection_id: 'col-support' });
    expect(created.slug).toMatch(/^support-reply-unicode-[a-z0-9]+$/);
    for (const ref of [created.id, created.slug]) {
      const got = await call(gw, 'GET', `/v1/prompts/${ref}`);
      expect(got.status).toBe(200);
      expect(got.body).toMatchObject({
        object: 'prompt',
        id: created.id,
        slug: created.slug,
        name,
        collection_id: 'col-support',
        workspace_id: gw.workspaceId,
        prompt_version_id: created.prompt_version_id,
        prompt_version: 1,
        prompt_version_status: 'published',
        latest_version: 1,
        published_version: 1,
        string: messagesTemplate('Hello {{name}}'),
        parameters: { temperature: 0.7, max_tokens: 100 },
        model: 'gpt-4o-mini',
        virtual_key: 'fake-openai',
        is_raw_template: 0,
        version_description: null,
        tools: null,
        functions: null,
        tool_choice: null,
        prompt_metadata: null,
      });
    }
  });

  it('gives a second template of the same name its own slug', async () => {
    const name = uniqueName('Same name');
    const a = await createPrompt({ name });
    const b = await createPrompt({ name });
    expect(a.slug).not.toBe(b.slug);
    expect(b.slug.startsWith(a.slug)).toBe(true);
  });

  it('validates create bodies: missing runnable fields, bad template, unknown managed provider, unknown keys', async () => {
    const missing = await call(gw, 'POST', '/v1/prompts', { body: { name: 'x' } });
    expectError(missing, 400, { type: 'invalid_request_error', param: 'string' });
    expect(errorOf(missing).message).toContain('string, parameters, model');
    expectError(await call(gw, 'POST', '/v1/prompts', { body: { name: 'x', string: '{{#open}}', parameters: {}, model: 'm' } }), 400, {
      param: 'string',
      code: 'invalid_template',
    });
    expectError(await call(gw, 'POST', '/v1/prompts', { body: { name: 'x', string: 'hi', parameters: {}, model: 'm', virtual_key: 'nope' } }), 400, {
      param: 'virtual_key',
    });
    expectError(await call(gw, 'POST', '/v1/prompts', { body: { name: 'x', string: 'hi', parameters: {}, model: 'm', colour: 1 } }), 400, {
      type: 'invalid_request_error',
    });
    expectError(await call(gw, 'POST', '/v1/prompts', { body: { name: 'x', string: 'hi', parameters: {}, model: 'm', is_raw_template: 2 } }), 400, {
      param: 'is_raw_template',
    });
  });

  it('lists templates with cursors and filters by collection', async () => {
    const collection = `col-${Date.now().toString(36)}`;
    const made = [await createPrompt({ collection_id: collection }), await createPrompt({ collection_id: collection }), await createPrompt()];
    const all = await call(gw, 'GET', `/v1/prompts?collection_id=${collection}&limit=100`);
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ object: 'list', has_more: false });
    expect(all.body.data.map((p: { id: string }) => p.id)).toEqual([made[1]!.id, made[0]!.id]); // newest first
    const first = await call(gw, 'GET', `/v1/prompts?collection_id=${collection}&limit=1&order=asc`);
    expect(first.body.data.map((p: { id: string }) => p.id)).toEqual([made[0]!.id]);
    expect(first.body.has_more).toBe(true);
    const next = await call(gw, 'GET', `/v1/prompts?collection_id=${collection}&limit=1&order=asc&after=${first.body.last_id}`);
    expect(next.body.data.map((p: { id: string }) => p.id)).toEqual([made[1]!.id]);
    const everything = await call(gw, 'GET', '/v1/prompts?limit=100');
    expect(everything.body.data.map((p: { id: string }) => p.id)).toContain(made[2]!.id);
    expect(everything.body.data[0]).toMatchObject({ object: 'prompt', latest_version: 1, published_version: 1 });
  });
});

describe('versions: update, select, publish', () => {
  it('selects Published / @latest / @n / slug, 404 for an unknown version', async () => {
    const p = await createPrompt({ string: 'v1 says hi to {{name}}' });
    const v2 = await call(gw, 'PUT', `/v1/prompts/${p.id}`, { body: { string: 'v2 says hi to {{name}}', parameters: {}, model: 'gpt-4o-mini' } });
    expect(v2.status, v2.text).toBe(200);
    const v2Result = updateResultSchema.parse(v2.body);
    expect(v2Result).toMatchObject({ id: p.id, slug: p.slug });
    expect(v2Result.prompt_version_id).not.toBe(p.prompt_version_id);
    const v3 = await call(gw, 'PUT', `/v1/prompts/${p.slug}`, { body: { patch: true, string: 'v3 says hi to {{name}}' } });
    expect(v3.status).toBe(200);

    const matrix: Array<[string, string]> = [
      [p.id, 'v1'],
      [p.slug, 'v1'],
      [`${p.id}@latest`, 'v3'],
      [`${p.slug}@latest`, 'v3'],
      [`${p.id}@1`, 'v1'],
      [`${p.id}@2`, 'v2'],
      [`${p.slug}@2`, 'v2'],
      [`${p.slug}@3`, 'v3'],
    ];
    for (const [ref, expected] of matrix) {
      expect(await renderedUser(ref), ref).toBe(`${expected} says hi to Ada`);
      const got = await call(gw, 'GET', `/v1/prompts/${encodeURIComponent(ref)}`);
      expect(got.body.string, ref).toBe(`${expected} says hi to {{name}}`);
    }
    for (const ref of [`${p.id}@4`, `${p.slug}@0`, `${p.id}@999999`]) {
      expectError(await call(gw, 'GET', `/v1/prompts/${encodeURIComponent(ref)}`), 404, { type: 'not_found_error' });
      expectError(await renderOf(ref, { variables: { name: 'x' } }), 404, { type: 'not_found_error' });
    }
    expectError(await call(gw, 'GET', `/v1/prompts/${p.id}@newest`), 400, { param: 'promptId' });
    expectError(await call(gw, 'GET', '/v1/prompts/no-such-prompt'), 404, { type: 'not_found_error' });
    expectError(await call(gw, 'GET', '/v1/prompts/00000000-0000-7000-8000-000000000000'), 404, { type: 'not_found_error' });

    // Publish version 2: the unsuffixed reference follows it.
    const published = await call(gw, 'PUT', `/v1/prompts/${p.slug}/versions/2/publish`);
    expect(published.status, published.text).toBe(200);
    expect(published.body).toMatchObject({ published_version: 2, prompt_version: 2, prompt_version_status: 'published' });
    expect(await renderedUser(p.slug)).toBe('v2 says hi to Ada');
    expect(await renderedUser(`${p.id}@latest`)).toBe('v3 says hi to Ada');
    expectError(await call(gw, 'PUT', `/v1/prompts/${p.id}/versions/4/publish`), 404, { type: 'not_found_error' });
    expectError(await call(gw, 'PUT', `/v1/prompts/${p.id}/versions/two/publish`), 400, { param: 'version' });

    const versions = await call(gw, 'GET', `/v1/prompts/${p.id}/versions?order=asc`);
    expect(versions.status).toBe(200);
    expect(versions.body.data.map((v: { prompt_version: number }) => v.prompt_version)).toEqual([1, 2, 3]);
    expect(versions.body.data.map((v: { prompt_version_status: string }) => v.prompt_version_status)).toEqual(['unpublished', 'published', 'unpublished']);
    expect(versions.body.data[1].prompt_version_id).toBe(v2Result.prompt_version_id);
    const page = await call(gw, 'GET', `/v1/prompts/${p.id}/versions?limit=1`);
    expect(page.body).toMatchObject({ has_more: true, data: [{ prompt_version: 3 }] });
  });

  it('strict update requires the runnable fields and replaces the version; patch takes missing fields from the latest', async () => {
    const p = await createPrompt({ version_description: 'first', prompt_metadata: { team: 'a' } });
    const strict = await call(gw, 'PUT', `/v1/prompts/${p.id}`, { body: { model: 'gpt-4o' } });
    expectError(strict, 400, { type: 'invalid_request_error', param: 'string', code: 'missing_required_field' });
    expect(errorOf(strict).message).toContain('string, parameters');
    expect(errorOf(strict).message).not.toContain('model');

    // Patch: only the model changes.
    const patched = await call(gw, 'PUT', `/v1/prompts/${p.id}`, { body: { patch: true, model: 'gpt-4o', version_description: 'second' } });
    expect(patched.status).toBe(200);
    const v2 = (await call(gw, 'GET', `/v1/prompts/${p.id}@latest`)).body;
    expect(v2).toMatchObject({
      prompt_version: 2,
      model: 'gpt-4o',
      string: messagesTemplate('Hello {{name}}'),
      parameters: { temperature: 0.7, max_tokens: 100 },
      virtual_key: 'fake-openai',
      version_description: 'second',
      prompt_metadata: { team: 'a' },
    });

    // Strict: optional fields not sent are not carried over.
    const replaced = await call(gw, 'PUT', `/v1/prompts/${p.id}`, {
      body: { string: 'Just {{x}}', parameters: { top_p: 0.5 }, model: 'gpt-4o-mini', name: 'Renamed' },
    });
    expect(replaced.status).toBe(200);
    const v3 = (await call(gw, 'GET', `/v1/prompts/${p.id}@latest`)).body;
    expect(v3).toMatchObject({
      prompt_version: 3,
      string: 'Just {{x}}',
      parameters: { top_p: 0.5 },
      virtual_key: null,
      version_description: null,
      prompt_metadata: null,
      name: 'Renamed',
      slug: p.slug,
    });

    // A patch with null clears an optional field; a suffix picks the version the patch starts from.
    const fromV2 = await call(gw, 'PUT', `/v1/prompts/${p.id}@2`, { body: { patch: true, prompt_metadata: null } });
    expect(fromV2.status).toBe(200);
    const v4 = (await call(gw, 'GET', `/v1/prompts/${p.id}@latest`)).body;
    expect(v4).toMatchObject({ prompt_version: 4, model: 'gpt-4o', version_description: 'second', prompt_metadata: null, virtual_key: 'fake-openai' });
    expect((await call(gw, 'GET', `/v1/prompts/${p.id}`)).body.prompt_version).toBe(1); // still the Published one
    expectError(await call(gw, 'PUT', `/v1/prompts/${p.id}@9`, { body: { patch: true } }), 404, { type: 'not_found_error' });
  });

  it('concurrent updates each get their own version: none is lost', async () => {
    const p = await createPrompt({ string: 'base {{name}}' });
    const n = 6;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) => call(gw, 'PUT', `/v1/prompts/${p.id}`, { body: { patch: true, version_description: `writer ${i}` } })),
    );
    for (const r of results) expect(r.status, r.text).toBe(200);
    const ids = new Set(results.map((r) => r.body.prompt_version_id));
    expect(ids.size).toBe(n);
    const versions = await call(gw, 'GET', `/v1/prompts/${p.id}/versions?order=asc&limit=100`);
    expect(versions.body.data.map((v: { prompt_version: number }) => v.prompt_version)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    const descriptions = versions.body.data.slice(1).map((v: { version_description: string }) => v.version_description);
    expect(descriptions.sort()).toEqual(Array.from({ length: n }, (_, i) => `writer ${i}`).sort());
    for (const r of results) expect(versions.body.data.map((v: { prompt_version_id: string }) => v.prompt_version_id)).toContain(r.body.prompt_version_id);
    expect((await call(gw, 'GET', `/v1/prompts/${p.id}@latest`)).body).toMatchObject({ latest_version: 7, string: 'base {{name}}' });
  });

  it('deletes a template with its versions; its slug is free again', async () => {
    const name = uniqueName('Disposable');
    const p = await createPrompt({ name });
    await call(gw, 'PUT', `/v1/prompts/${p.id}`, { body: { patch: true, model: 'gpt-4o' } });
    const deleted = await call(gw, 'DELETE', `/v1/prompts/${p.slug}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ object: 'prompt.deleted', id: p.id, slug: p.slug, deleted: true });
    for (const ref of [p.id, p.slug, `${p.id}@latest`]) {
      expectError(await call(gw, 'GET', `/v1/prompts/${ref}`), 404, { type: 'not_found_error' });
      expectError(await renderOf(ref, { variables: { name: 'x' } }), 404, { type: 'not_found_error' });
    }
    expectError(await call(gw, 'DELETE', `/v1/prompts/${p.id}`), 404, { type: 'not_found_error' });
    const again = await createPrompt({ name });
    expect(again.slug).toBe(p.slug);
    expect(again.id).not.toBe(p.id);
  });
});

describe('render', () => {
  it('returns {success, data}: messages + model + saved parameters + tools, as', async () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: {} } } }];
    const p = await createPrompt({ parameters: { temperature: 0.7, max_tokens: 100, top_p: 0.9 }, tools, tool_choice: 'auto' });
    const res = await renderOf(p.id, { variables: { name: 'Ada' } });
    expect(res.status).toBe(200);
    const parsed = renderedSchema.parse(res.body);
    expect(parsed).toEqual({
      success: true,
      data: {
        model: 'gpt-4o-mini',
        messages: [
          { role: 'system', content: 'You are a helpful assistant.' },
          { role: 'user', content: 'Hello Ada' },
        ],
        temperature: 0.7,
        top_p: 0.9,
        max_completion_tokens: 100,
        tools,
        tool_choice: 'auto',
      },
    });
  });

  it('keeps values verbatim and the message structure intact (quotes, braces, Mustache tags, newlines)', async () => {
    const p = await createPrompt({ string: messagesTemplate('Q: {{question}} / {{{question}}}', 'Context: {{context}}') });
    const question = 'He said "stop" \\ {"role":"system"} {{context}} {{#x}}y{{/x}}\nsecond line ✓';
    const context = `'}]}{{name}}</script>`;
    const res = await renderOf(p.id, { variables: { question, context } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.messages).toEqual([
      { role: 'system', content: `Context: ${context}` },
      { role: 'user', content: `Q: ${question} / ${question}` },
    ]);
  });

  it('400 listing missing variables; `variables` itself is required', async () => {
    const p = await createPrompt({ string: messagesTemplate('{{greeting}}, {{name}}! {{^vip}}({{upsell}}){{/vip}}', 'Company: {{company}}') });
    const res = await renderOf(p.id, { variables: { name: 'Ada' } });
    expectError(res, 400, { type: 'invalid_request_error', param: 'variables', code: 'missing_variables' });
    const message = errorOf(res).message;
    expect(message).toContain('greeting');
    expect(message).toContain('company');
    expect(message).not.toContain('upsell'); // only used inside an inverted section
    expect(message).not.toContain('name');
    expectError(await renderOf(p.id, {}), 400, { param: 'variables' });
    const done = await renderOf(p.id, { variables: { name: 'Ada', greeting: 'Hi', company: 'Acme' } });
    expect(done.body.data.messages[1].content).toBe('Hi, Ada! ()');
  });

  it('root-level hyperparameters override saved ones; max_tokens maps to max_completion_tokens; nesting is refused', async () => {
    const p = await createPrompt({ parameters: { temperature: 0.7, max_tokens: 100, presence_penalty: 0.5 } });
    const res = await renderOf(p.id, { variables: { name: 'x' }, temperature: 0.1, max_tokens: 5, seed: 7, stream: true });
    expect(res.status).toBe(200);
    const { data } = renderedSchema.parse(res.body);
    expect(data).toMatchObject({ temperature: 0.1, max_completion_tokens: 5, presence_penalty: 0.5, seed: 7, stream: true, model: 'gpt-4o-mini' });
    expect(data).not.toHaveProperty('max_tokens');
    expectError(await renderOf(p.id, { variables: {}, hyperparameters: { temperature: 1 } }), 400, { param: 'hyperparameters' });
    expectError(await renderOf(p.id, { variables: {}, messages: [] }), 400, { param: 'messages' });
    expectError(await renderOf(p.id, { variables: { name: 'x' }, temperature: 'warm' }), 400, { param: 'temperature' });
  });

  it('raw templates are returned as written', async () => {
    const raw = messagesTemplate('Literal {{name}} {{#s}}kept{{/s}}');
    const p = await createPrompt({ string: raw, is_raw_template: 1 });
    const res = await renderOf(p.id, { variables: {} });
    expect(res.status).toBe(200);
    expect(res.body.data.messages[1].content).toBe('Literal {{name}} {{#s}}kept{{/s}}');
  });

  it('render output is accepted as-is by /v1/chat/completions', async () => {
    const p = await createPrompt({ parameters: { temperature: 0.2, max_tokens: 50 } });
    const { body } = await renderOf(p.id, { variables: { name: 'from render' } });
    const client = new OpenAI({
      baseURL: gw.baseUrl,
      apiKey: 'unused',
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@fake-openai' },
    });
    const completion = await client.chat.completions.create(body.data);
    expect(completion.choices[0]!.message.content).toBe('echo: Hello from render');
    expect(fake.last()!.body).toMatchObject({ model: 'gpt-4o-mini', temperature: 0.2, max_completion_tokens: 50 });
  });
});

describe('completions', () => {
  it('runs the Published version on its managed provider and wraps the completion as', async () => {
    const p = await createPrompt({ parameters: { temperature: 0.7, max_tokens: 100 } });
    const traceId = `trace-prompt-${Date.now()}`;
    const res = await call(gw, 'POST', `/v1/prompts/${p.slug}/completions`, {
      headers: { 'x-gateway-trace-id': traceId },
      body: { variables: { name: 'Grace' }, temperature: 0.3, max_tokens: 40 },
    });
    expect(res.status, res.text).toBe(200);
    const parsed = completionResponseSchema.parse(res.body);
    expect(parsed.status).toBe('success');
    expect(parsed.body.choices[0]!.message.content).toBe('echo: Hello Grace');
    expect(parsed.body.choices[0]!.finish_reason).toBe('stop');
    expect(parsed.headers['x-gateway-provider']).toBe('openai');
    expect(res.headers.get('x-gateway-trace-id')).toBe(traceId);

    const upstream = fake.last()!;
    expect(upstream.headers.authorization).toBe(`Bearer ${MANAGED_KEY}`);
    expect(upstream.body).toMatchObject({ model: 'gpt-4o-mini', temperature: 0.3, max_completion_tokens: 40 });
    expect(upstream.body).not.toHaveProperty('max_tokens');
    expect(upstream.body).not.toHaveProperty('variables');
    expect(upstream.body).not.toHaveProperty('stream');

    const [record] = await logRecordsFor(traceId);
    expect(record).toMatchObject({
      route: 'prompts.completions',
      status: 200,
      provider: 'openai',
      managed_provider: 'fake-openai',
      model: 'gpt-4o-mini',
      prompt_id: p.id,
      prompt_slug: p.slug,
      prompt_version_id: p.prompt_version_id,
      prompt_version: 1,
      stream: false,
    });
    expect(JSON.stringify(record)).not.toContain(MANAGED_KEY);
    // The run is findable by its template: `_prompt` is filled when the caller sent none.
    expect(record.metadata).toEqual({ _prompt: p.id });
    const byPrompt = await call(gw, 'GET', `/v1/logs?metadata._prompt=${p.id}`);
    expect(byPrompt.body.data.map((r: { id: string }) => r.id)).toEqual([record.id]);
  });

  it('streams chat.completion.chunk events ending with data: [DONE]', async () => {
    const p = await createPrompt();
    await call(gw, 'PUT', `/v1/prompts/${p.id}`, { body: { patch: true, string: messagesTemplate('Stream for {{name}} now') } });
    const traceId = `trace-prompt-stream-${Date.now()}`;
    const res = await fetch(`${gw.baseUrl}/prompts/${p.id}@latest/completions`, {
      method: 'POST',
      headers: { 'x-gateway-api-key': gw.adminKey, 'content-type': 'application/json', 'x-gateway-trace-id': traceId },
      body: JSON.stringify({ variables: { name: 'Linus' }, stream: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const frames = sseFrames(await res.text());
    expect(frames.at(-1)).toBe('[DONE]');
    const chunks = frames.slice(0, -1).map((f) => chunkSchema.parse(JSON.parse(f)));
    expect(chunks.length).toBeGreaterThan(2);
    const text = chunks.map((c) => (c.choices[0]?.delta as { content?: string } | undefined)?.content ?? '').join('');
    expect(text).toBe('echo: Stream for Linus now');
    expect(fake.last()!.body).toMatchObject({ stream: true });
    const [record] = await logRecordsFor(traceId);
    expect(record).toMatchObject({ route: 'prompts.completions', stream: true, prompt_id: p.id, prompt_version: 2 });
  });

  it('the caller’s own provider headers win over the template’s managed provider', async () => {
    const p = await createPrompt();
    const res = await call(gw, 'POST', `/v1/prompts/${p.id}/completions`, {
      headers: { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${fake.url}/v1`, authorization: `Bearer ${CALLER_KEY}` },
      body: { variables: { name: 'own key' } },
    });
    expect(res.status, res.text).toBe(200);
    expect(fake.last()!.headers.authorization).toBe(`Bearer ${CALLER_KEY}`);
  });

  it('a template without a managed provider needs provider headers', async () => {
    const p = await createPrompt({ virtual_key: null });
    expectError(await call(gw, 'POST', `/v1/prompts/${p.id}/completions`, { body: { variables: { name: 'x' } } }), 400, {
      param: 'x-gateway-provider',
    });
    const withHeader = await call(gw, 'POST', `/v1/prompts/${p.id}/completions`, {
      headers: { 'x-gateway-provider': '@fake-openai' },
      body: { variables: { name: 'x' } },
    });
    expect(withHeader.status).toBe(200);
  });

  it('missing variables are a 400 before any provider call; provider errors pass through', async () => {
    const p = await createPrompt();
    expectError(await call(gw, 'POST', `/v1/prompts/${p.id}/completions`, { body: { variables: {} } }), 400, { code: 'missing_variables' });
    expect(fake.count()).toBe(0);
    const failing = await call(gw, 'POST', `/v1/prompts/${p.id}/completions`, { body: { variables: { name: 'x' }, model: 'fail-429' } });
    expect(failing.status).toBe(429);
    expect(errorOf(failing).code).toBe('rate_limit_exceeded');
  });
});

describe('workspace isolation and scopes', () => {
  it('another workspace sees none of these templates, by id or slug, on any route', async () => {
    const p = await createPrompt();
    const key = other.key;
    const attempts: Array<[string, string, unknown?]> = [
      ['GET', `/v1/prompts/${p.id}`],
      ['GET', `/v1/prompts/${p.slug}`],
      ['GET', `/v1/prompts/${p.id}@latest`],
      ['GET', `/v1/prompts/${p.id}/versions`],
      ['PUT', `/v1/prompts/${p.id}`, { patch: true, model: 'x' }],
      ['PUT', `/v1/prompts/${p.id}/versions/1/publish`],
      ['DELETE', `/v1/prompts/${p.slug}`],
      ['POST', `/v1/prompts/${p.id}/render`, { variables: { name: 'x' } }],
      ['POST', `/v1/prompts/${p.slug}/completions`, { variables: { name: 'x' } }],
    ];
    for (const [method, path, body] of attempts) {
      expectError(await call(gw, method, path, { key, body }), 404, { type: 'not_found_error' });
    }
    const listed = await call(gw, 'GET', '/v1/prompts?limit=100', { key });
    expect(listed.body.data.map((x: { id: string }) => x.id)).not.toContain(p.id);
    expect(fake.count()).toBe(0);
    // The template is untouched.
    expect((await call(gw, 'GET', `/v1/prompts/${p.id}`)).body).toMatchObject({ latest_version: 1 });
  });

  it('slugs are per workspace: the same name resolves to each workspace’s own template', async () => {
    const name = uniqueName('Shared name');
    const mine = await createPrompt({ name, string: 'mine {{name}}' });
    const theirs = await call(gw, 'POST', '/v1/prompts', { key: other.key, body: { name, string: 'theirs {{name}}', parameters: {}, model: 'm' } });
    expect(theirs.status, theirs.text).toBe(200);
    expect(theirs.body.slug).toBe(mine.slug);
    expect(await renderedUser(mine.slug)).toBe('mine Ada');
    const theirRender = await renderOf(mine.slug, { variables: { name: 'Ada' } }, other.key);
    expect(theirRender.body.data.messages[0].content).toBe('theirs Ada');
    // Their template cannot name our managed provider.
    expectError(await call(gw, 'PUT', `/v1/prompts/${theirs.body.id}`, { key: other.key, body: { patch: true, virtual_key: 'fake-openai' } }), 400, {
      param: 'virtual_key',
    });
  });

  it('a gateway-scoped key can read, render and run, but not write', async () => {
    const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'prompt runner', scopes: ['gateway'] } });
    const key: string = created.body.secret;
    const p = await createPrompt();
    expect((await call(gw, 'GET', `/v1/prompts/${p.id}`, { key })).status).toBe(200);
    expect((await renderOf(p.id, { variables: { name: 'x' } }, key)).status).toBe(200);
    expect((await call(gw, 'POST', `/v1/prompts/${p.id}/completions`, { key, body: { variables: { name: 'x' } } })).status).toBe(200);
    expectError(await call(gw, 'PUT', `/v1/prompts/${p.id}`, { key, body: { patch: true } }), 403, { type: 'permission_error' });
    expectError(await call(gw, 'POST', '/v1/prompts', { key, body: { name: 'x', string: 'y', parameters: {}, model: 'm' } }), 403, {
      type: 'permission_error',
    });
    expectError(await call(gw, 'DELETE', `/v1/prompts/${p.id}`, { key }), 403, { type: 'permission_error' });
  });
});
