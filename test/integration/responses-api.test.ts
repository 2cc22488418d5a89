import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateObject, generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import type { LocalGateway } from '../../infra/local/server';
import { startAllFakes, type AllFakes } from '../fakes';
import { FAKE_AWS, manageFakes } from '../support/managed-fakes';
import { call, errorOf, startTestGateway } from '../support/gateway';

// POST /v1/responses on every provider, through the clients that call it by default: the
// openai SDK's responses API and the Vercel AI SDK's default OpenAI model.
let gw: LocalGateway;
let fakes: AllFakes;

beforeAll(async () => {
  fakes = await startAllFakes({}, { credentials: FAKE_AWS });
  gw = await startTestGateway();
  await manageFakes(gw, fakes, 'r');
  // An OpenAI-shaped provider without the Responses API: translated through chat like the rest.
  const mistral = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'r-mistral', provider: 'mistral-ai', api_key: 'sk-mistral', custom_host: `${fakes.openai.url}/v1` },
  });
  expect(mistral.status, mistral.text).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await fakes?.close();
});
beforeEach(() => fakes.reset());

const MODELS: Record<string, string> = {
  'r-claude': 'claude-sonnet-4-5',
  'r-gemini': 'gemini-2.5-flash',
  'r-bedrock': 'anthropic.claude-3-5-sonnet-20240620-v1:0',
  'r-mistral': 'mistral-large-latest',
};
const client = (slug: string) =>
  new OpenAI({ baseURL: gw.baseUrl, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': `@${slug}` } });

const weatherTool = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'], additionalProperties: false },
  strict: true,
};

describe.each(Object.keys(MODELS))('%s through the openai SDK', (slug) => {
  it('responses.create: a response object with output text and usage', async () => {
    const res = await client(slug).responses.create({ model: MODELS[slug]!, input: 'Hello there', instructions: 'Be brief.' });
    expect(res.object).toBe('response');
    expect(res.status).toBe('completed');
    expect(res.id).toMatch(/^resp_/);
    expect(res.output_text).toContain('Hello there');
    expect(res.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number), total_tokens: expect.any(Number) });
  });

  it('responses.stream: the SDK accumulates the events into the final response', async () => {
    const stream = client(slug).responses.stream({ model: MODELS[slug]!, input: 'Stream me please' });
    const types = new Set<string>();
    stream.on('event', (e) => types.add(e.type));
    const final = await stream.finalResponse();
    const text = final.output
      .flatMap((o) => (o.type === 'message' ? o.content : []))
      .map((c) => (c.type === 'output_text' ? c.text : ''))
      .join('');
    expect(text).toContain('Stream me please');
    for (const t of [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.completed',
    ]) {
      expect(types.has(t), t).toBe(true);
    }
  });

  it('a function call round trip, continued with previous_response_id', async () => {
    const api = client(slug);
    const first = await api.responses.create({ model: MODELS[slug]!, input: 'What is the weather in Rome?', tools: [weatherTool] });
    const call = first.output.find((o) => o.type === 'function_call');
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather' });
    expect(JSON.parse((call as { arguments: string }).arguments)).toEqual({ location: 'Rome' });
    const second = await api.responses.create({
      model: MODELS[slug]!,
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: (call as { call_id: string }).call_id, output: 'sunny, 24 C' }],
      tools: [weatherTool],
    });
    expect(second.output_text).toContain('sunny, 24 C');
  });

  it('text.format json_schema: output_text is JSON that follows the schema', async () => {
    const res = await client(slug).responses.create({
      model: MODELS[slug]!,
      input: 'Weather in Oslo as JSON',
      text: { format: { type: 'json_schema', name: 'weather', schema: weatherTool.parameters, strict: true } },
    });
    expect(JSON.parse(res.output_text)).toEqual({ location: expect.any(String) });
  });
});

describe('stored responses (translated providers)', () => {
  it('previous_response_id replays the conversation to the provider (Bedrock)', async () => {
    const api = client('r-bedrock');
    const first = await api.responses.create({ model: MODELS['r-bedrock']!, input: 'My name is Ada.' });
    await api.responses.create({ model: MODELS['r-bedrock']!, input: 'What is my name?', previous_response_id: first.id });
    const sent = fakes.bedrock.last()!.body as { messages: Array<{ role: string; content: Array<{ text?: string }> }> };
    expect(sent.messages.map((m) => [m.role, m.content[0]?.text])).toEqual([
      ['user', 'My name is Ada.'],
      ['assistant', expect.stringContaining('My name is Ada.')],
      ['user', 'What is my name?'],
    ]);
  });

  it('GET returns a stored response, input_items lists its input, DELETE removes it; store: false keeps nothing', async () => {
    const api = client('r-claude');
    const res = await api.responses.create({ model: MODELS['r-claude']!, input: 'Keep me' });
    const got = await api.responses.retrieve(res.id);
    expect(got).toMatchObject({ id: res.id, object: 'response', status: 'completed' });
    expect(got.output).toEqual(res.output);
    const items = await api.responses.inputItems.list(res.id);
    expect(items.data).toEqual([expect.objectContaining({ type: 'message', role: 'user' })]);
    const deleted = await call(gw, 'DELETE', `/v1/responses/${res.id}`, { headers: { 'x-gateway-provider': '@r-claude' } });
    expect(deleted.body).toEqual({ id: res.id, object: 'response.deleted', deleted: true });
    expect((await call(gw, 'GET', `/v1/responses/${res.id}`)).status).toBe(404);

    const unstored = await api.responses.create({ model: MODELS['r-claude']!, input: 'Forget me', store: false });
    expect((await call(gw, 'GET', `/v1/responses/${unstored.id}`)).status).toBe(404);
    const err = await api.responses.create({ model: MODELS['r-claude']!, input: 'x', previous_response_id: unstored.id }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('a stored response belongs to its workspace', async () => {
    const res = await client('r-claude').responses.create({ model: MODELS['r-claude']!, input: 'Mine' });
    const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'Other' } });
    const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'other', workspace_id: ws.body.id, scopes: ['gateway'] } });
    const other = await call(gw, 'GET', `/v1/responses/${res.id}`, { key: key.body.secret });
    expect(other.status).toBe(404);
  });
});

describe('errors and pass-through', () => {
  it('a built-in OpenAI tool on a provider without it: 400 naming the tool', async () => {
    const err = await client('r-claude')
      .responses.create({ model: MODELS['r-claude']!, input: 'x', tools: [{ type: 'web_search' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as { param?: string }).param).toBe('tools[0].type');
    expect(fakes.anthropic.count()).toBe(0);
  });

  it('a provider failure mid-stream ends with response.failed, never a completion', async () => {
    fakes.anthropic.setBehaviour({ cutAfter: 3 });
    const stream = client('r-claude').responses.stream({ model: MODELS['r-claude']!, input: 'Cut me off somewhere in the middle please' });
    const types: string[] = [];
    stream.on('event', (e) => types.push(e.type));
    await expect(stream.finalResponse()).rejects.toThrow();
    expect(types).not.toContain('response.completed');
  });

  it('OpenAI: passed through natively, body unchanged, logged', async () => {
    const body = { model: 'gpt-4o-mini', input: 'native', tools: [{ type: 'web_search' }], store: true };
    const res = await call(gw, 'POST', '/v1/responses', { body, headers: { 'x-gateway-provider': '@r-openai' } });
    expect(res.status).toBe(200);
    const upstream = fakes.openai.last()!;
    expect(upstream.path).toBe('/v1/responses');
    expect(upstream.body).toEqual(body);
    expect(upstream.headers.authorization).toBe('Bearer sk-openai');
  });

  it('an invalid body: 400 naming the field', async () => {
    const res = await call(gw, 'POST', '/v1/responses', { body: { model: 'm', input: 'x', temperature: 9 }, headers: { 'x-gateway-provider': '@r-claude' } });
    expect(res.status).toBe(400);
    expect(errorOf(res).param).toBe('temperature');
  });
});

describe('the Vercel AI SDK default model (createOpenAI()(model) posts to /v1/responses)', () => {
  let provider: ReturnType<typeof createOpenAI>;
  beforeAll(async () => {
    // A client that sets only a base URL and a key: the gateway key with a default config.
    const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'ai-sdk', default_config: { provider: '@r-claude' } } });
    provider = createOpenAI({ baseURL: gw.baseUrl, apiKey: key.body.secret });
  });

  it('generateText', async () => {
    const { text, usage } = await generateText({ model: provider(MODELS['r-claude']!), prompt: 'Hello from the AI SDK' });
    expect(text).toContain('Hello from the AI SDK');
    expect(usage.inputTokens).toBeGreaterThan(0);
  });

  it('streamText with a tool, through the tool round trip', async () => {
    const result = streamText({
      model: provider(MODELS['r-claude']!),
      prompt: 'What is the weather in Lima?',
      tools: {
        get_weather: tool({
          description: 'Weather for a city',
          inputSchema: jsonSchema<{ location: string }>({ type: 'object', properties: { location: { type: 'string' } }, required: ['location'] }),
          execute: async ({ location }) => `warm in ${location}`,
        }),
      },
      stopWhen: stepCountIs(2),
    });
    let text = '';
    for await (const delta of result.textStream) text += delta;
    const steps = await result.steps;
    expect(steps[0]!.toolCalls[0]).toMatchObject({ toolName: 'get_weather', input: { location: 'Lima' } });
    expect(text).toContain('warm in Lima');
  });

  it('generateObject', async () => {
    const { object } = await generateObject({
      model: provider(MODELS['r-claude']!),
      prompt: 'Weather in Quito',
      schema: jsonSchema<{ location: string; temperature_c: number }>({
        type: 'object',
        properties: { location: { type: 'string' }, temperature_c: { type: 'number' } },
        required: ['location', 'temperature_c'],
        additionalProperties: false,
      }),
    });
    expect(object).toEqual({ location: expect.any(String), temperature_c: expect.any(Number) });
  });
});
