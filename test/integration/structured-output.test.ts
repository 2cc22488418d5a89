import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { LocalGateway } from '../../infra/local/server';
import { startAllFakes, type AllFakes } from '../fakes';
import { FAKE_AWS, manageFakes } from '../support/managed-fakes';
import { startTestGateway } from '../support/gateway';

// response_format on translated providers: each provider is held to the schema by its own
// means (Anthropic and Bedrock: a forced answer tool; Gemini: responseSchema; Cohere:
// response_format), and the answer comes back as JSON message content that parses.
let gw: LocalGateway;
let fakes: AllFakes;

beforeAll(async () => {
  fakes = await startAllFakes({}, { credentials: FAKE_AWS });
  gw = await startTestGateway();
  await manageFakes(gw, fakes, 's');
});
afterAll(async () => {
  await gw?.stop();
  await fakes?.close();
});
beforeEach(() => fakes.reset());

const MODELS: Record<string, string> = {
  's-claude': 'claude-sonnet-4-5',
  's-gemini': 'gemini-2.5-flash',
  's-bedrock': 'anthropic.claude-3-5-sonnet-20240620-v1:0',
  's-cohere': 'command-a-03-2025',
};
const client = (slug: string) =>
  new OpenAI({ baseURL: gw.baseUrl, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': `@${slug}` } });

const weatherSchema = {
  type: 'object',
  properties: { location: { type: 'string' }, temperature_c: { type: 'number' }, sunny: { type: 'boolean' } },
  required: ['location', 'temperature_c', 'sunny'],
  additionalProperties: false,
};
const jsonSchemaFormat = { type: 'json_schema' as const, json_schema: { name: 'weather', schema: weatherSchema, strict: true } };
const ask = [{ role: 'user' as const, content: 'What is the weather in Paris?' }];

describe.each(Object.keys(MODELS))('%s: response_format', (slug) => {
  it('json_schema: the content parses and follows the schema', async () => {
    const res = await client(slug).chat.completions.create({ model: MODELS[slug]!, messages: ask, response_format: jsonSchemaFormat });
    const choice = res.choices[0]!;
    expect(choice.finish_reason).toBe('stop');
    expect(choice.message.tool_calls ?? []).toEqual([]);
    const parsed = JSON.parse(choice.message.content!);
    expect(Object.keys(parsed).sort()).toEqual(['location', 'sunny', 'temperature_c']);
    expect(parsed).toMatchObject({ location: expect.any(String), temperature_c: expect.any(Number), sunny: expect.any(Boolean) });
  });

  it('json_schema, streamed: the concatenated deltas parse, and the stream ends with stop', async () => {
    const stream = await client(slug).chat.completions.create({ model: MODELS[slug]!, messages: ask, response_format: jsonSchemaFormat, stream: true });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      expect(chunk.choices[0]?.delta.tool_calls).toBeUndefined();
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe('stop');
    expect(Object.keys(JSON.parse(text)).sort()).toEqual(['location', 'sunny', 'temperature_c']);
  });

  it('json_object: the content is a JSON object', async () => {
    const res = await client(slug).chat.completions.create({
      model: MODELS[slug]!,
      messages: [{ role: 'user', content: 'Say hi as JSON' }],
      response_format: { type: 'json_object' },
    });
    const parsed = JSON.parse(res.choices[0]!.message.content!);
    expect(typeof parsed).toBe('object');
    expect(Array.isArray(parsed)).toBe(false);
  });
});

describe.each(['s-claude', 's-bedrock'])('%s: the forced answer tool', (slug) => {
  it('a schema whose root is not an object is wrapped for the tool and unwrapped in the answer, streamed or not', async () => {
    const format = { type: 'json_schema' as const, json_schema: { name: 'cities', schema: { type: 'array', items: { type: 'string' } } } };
    const res = await client(slug).chat.completions.create({ model: MODELS[slug]!, messages: ask, response_format: format });
    expect(JSON.parse(res.choices[0]!.message.content!)).toEqual([expect.any(String)]);
    const stream = await client(slug).chat.completions.create({ model: MODELS[slug]!, messages: ask, response_format: format, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(JSON.parse(text)).toEqual([expect.any(String)]);
  });

  it('with the caller’s own tools, the model may still call them (tool_calls), never answer in free text', async () => {
    const tools = [
      { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } } },
    ];
    const res = await client(slug).chat.completions.create({ model: MODELS[slug]!, messages: ask, tools, response_format: jsonSchemaFormat });
    expect(res.choices[0]!.finish_reason).toBe('tool_calls');
    expect(res.choices[0]!.message.tool_calls![0]).toMatchObject({ function: { name: 'get_weather' } });
  });

  it('a caller tool named like the answer tool is refused, naming the field', async () => {
    const tools = [{ type: 'function' as const, function: { name: 'json_answer', parameters: { type: 'object' } } }];
    const err = await client(slug)
      .chat.completions.create({ model: MODELS[slug]!, messages: ask, tools, response_format: jsonSchemaFormat })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as { param?: string }).param).toBe('tools[0].function.name');
  });
});

it('the upstream request holds the model to the schema by the provider’s own means, not by a prompt', async () => {
  await client('s-claude').chat.completions.create({ model: MODELS['s-claude']!, messages: ask, response_format: jsonSchemaFormat });
  const anthropic = fakes.anthropic.last()!.body as Record<string, unknown>;
  expect(anthropic.tool_choice).toEqual({ type: 'tool', name: 'json_answer' });
  expect(anthropic.tools).toEqual([expect.objectContaining({ name: 'json_answer', input_schema: weatherSchema })]);
  expect(JSON.stringify(anthropic.system ?? '')).not.toContain('JSON');

  await client('s-bedrock').chat.completions.create({ model: MODELS['s-bedrock']!, messages: ask, response_format: jsonSchemaFormat });
  const bedrock = fakes.bedrock.last()!.body as { toolConfig: Record<string, unknown> };
  expect(bedrock.toolConfig.toolChoice).toEqual({ tool: { name: 'json_answer' } });

  await client('s-gemini').chat.completions.create({ model: MODELS['s-gemini']!, messages: ask, response_format: jsonSchemaFormat });
  const gemini = fakes.gemini.last()!.body as { generationConfig: Record<string, unknown> };
  expect(gemini.generationConfig.responseMimeType).toBe('application/json');
  expect(gemini.generationConfig.responseSchema).toBeDefined();

  await client('s-cohere').chat.completions.create({ model: MODELS['s-cohere']!, messages: ask, response_format: jsonSchemaFormat });
  expect((fakes.cohere.last()!.body as Record<string, unknown>).response_format).toEqual({ type: 'json_object', json_schema: weatherSchema });
});

describe('parameters a provider cannot honour', () => {
  it.each([
    ['s-claude', { logprobs: true }, 'logprobs'],
    ['s-claude', { top_logprobs: 2 }, 'top_logprobs'],
    ['s-bedrock', { n: 2 }, 'n'],
    ['s-bedrock', { logit_bias: { '50256': -100 } }, 'logit_bias'],
    ['s-cohere', { logprobs: true }, 'logprobs'],
  ])('%s refuses %o with a 400 naming %s, before any provider call', async (slug, extra, param) => {
    const err = await client(slug)
      .chat.completions.create({ model: MODELS[slug]!, messages: ask, ...(extra as object) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as { param?: string }).param).toBe(param);
    expect(fakes.anthropic.count() + fakes.bedrock.count() + fakes.cohere.count()).toBe(0);
  });

  it('Gemini honours them natively (candidateCount, seed, logprobs)', async () => {
    await client('s-gemini').chat.completions.create({ model: MODELS['s-gemini']!, messages: ask, n: 2, seed: 7, logprobs: true });
    expect((fakes.gemini.last()!.body as { generationConfig: Record<string, unknown> }).generationConfig).toMatchObject({
      candidateCount: 2,
      seed: 7,
      responseLogprobs: true,
    });
  });
});
