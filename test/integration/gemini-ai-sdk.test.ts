import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { embedMany, generateObject, generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import type { LocalGateway } from '../../infra/local/server';
import { startAllFakes, type AllFakes, type FakeServer } from '../fakes';
import { FAKE_AWS, manageFakes } from '../support/managed-fakes';
import { call, startTestGateway } from '../support/gateway';

// The AI SDK's google provider (@ai-sdk/google) pointed at the gateway's Gemini API: a client
// that sets only a base URL (…/v1beta) and an API key, the gateway key with a default config.
let gw: LocalGateway;
let fakes: AllFakes;

beforeAll(async () => {
  fakes = await startAllFakes({}, { credentials: FAKE_AWS });
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0' } });
  await manageFakes(gw, fakes, 's');
});
afterAll(async () => {
  await gw?.stop();
  await fakes?.close();
});
beforeEach(() => fakes.reset());

const MODELS: Record<string, string> = { 's-openai': 'gpt-4o-mini', 's-claude': 'claude-sonnet-4-5' };
const FAKE_OF: Record<string, () => FakeServer> = { 's-openai': () => fakes.openai, 's-claude': () => fakes.anthropic };

describe.each(Object.keys(MODELS))('@ai-sdk/google on %s', (slug) => {
  let google: ReturnType<typeof createGoogleGenerativeAI>;
  const model = () => google(MODELS[slug]!);
  beforeAll(async () => {
    const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: `ai-sdk-google-${slug}`, default_config: { provider: `@${slug}` } } });
    expect(key.status, key.text).toBe(200);
    google = createGoogleGenerativeAI({ baseURL: `${gw.url}/v1beta`, apiKey: key.body.secret });
  });

  it('generateText with a system prompt reports usage', async () => {
    const { text, usage, finishReason } = await generateText({ model: model(), system: 'Be brief.', prompt: 'Hello from the AI SDK' });
    expect(text).toBe('echo: Hello from the AI SDK');
    expect(finishReason).toBe('stop');
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect(usage.outputTokens).toBeGreaterThan(0);
    expect(JSON.stringify(FAKE_OF[slug]!().last()!.body)).toContain('Be brief.');
  });

  it('streamText with a tool, through the tool round trip', async () => {
    const result = streamText({
      model: model(),
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
    expect(FAKE_OF[slug]!().count()).toBe(2);
  });

  it('a stream cut after the first text is a stream error after that text, not a failed request', async () => {
    FAKE_OF[slug]!().setBehaviour({ cutAfter: 4 });
    const result = streamText({ model: model(), prompt: 'Say one two three four five six', maxRetries: 0 });
    let text = '';
    const errors: unknown[] = [];
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta') text += part.text;
      if (part.type === 'error') errors.push(part.error);
    }
    expect(text.length).toBeGreaterThan(0);
    expect(errors).toHaveLength(1);
    expect(JSON.stringify(errors[0])).toContain('UNAVAILABLE');
  });

  it('generateObject: the schema is enforced on the provider', async () => {
    const { object } = await generateObject({
      model: model(),
      prompt: 'Weather in Quito',
      schema: jsonSchema<{ location: string; temperature_c: number }>({
        type: 'object',
        properties: { location: { type: 'string' }, temperature_c: { type: 'number' } },
        required: ['location', 'temperature_c'],
        additionalProperties: false,
      }),
    });
    expect(object).toEqual({ location: expect.any(String), temperature_c: expect.any(Number) });
    expect(JSON.stringify(FAKE_OF[slug]!().last()!.body)).toContain('temperature_c');
  });
});

it('@ai-sdk/google embedMany on an OpenAI-backed provider (batchEmbedContents)', async () => {
  const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'ai-sdk-google-embed', default_config: { provider: '@s-openai' } } });
  const google = createGoogleGenerativeAI({ baseURL: `${gw.url}/v1beta`, apiKey: key.body.secret });
  const { embeddings } = await embedMany({ model: google.textEmbeddingModel('text-embedding-3-small'), values: ['one', 'two', 'three'] });
  expect(embeddings).toHaveLength(3);
  expect(embeddings[0]!.length).toBeGreaterThan(0);
  expect((fakes.openai.last()!.body as { input: string[] }).input).toEqual(['one', 'two', 'three']);
});
