import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic, { BadRequestError as AnthropicBadRequest } from '@anthropic-ai/sdk';
import OpenAI, { BadRequestError as OpenAIBadRequest } from 'openai';
import type { LocalGateway } from '../../infra/local/server';
import { startAllFakes, type AllFakes } from '../fakes';
import { FAKE_AWS, manageFakes } from '../support/managed-fakes';
import { call, logsOf, startTestGateway } from '../support/gateway';

// Token counting on every provider through the real clients: `/v1/messages/count_tokens`
// (@anthropic-ai/sdk) and `/v1/responses/input_tokens` (openai). Each answer says how it was
// counted in `x-gateway-token-count-method`: the provider's own count API, the model's
// tokenizer, or the documented estimate.
let gw: LocalGateway;
let fakes: AllFakes;

beforeAll(async () => {
  fakes = await startAllFakes({}, { credentials: FAKE_AWS });
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0' } });
  await manageFakes(gw, fakes, 't');
});
afterAll(async () => {
  await gw?.stop();
  await fakes?.close();
});
beforeEach(() => fakes.reset());

const METHOD = 'x-gateway-token-count-method';

const anthropicClient = (headers: Record<string, string>) =>
  new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': gw.adminKey, ...headers } });
const openaiClient = (headers: Record<string, string>) =>
  new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': gw.adminKey, ...headers } });

const weatherTool: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Current weather of a city',
  input_schema: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
};
const ASK = { system: 'Be brief.', messages: [{ role: 'user' as const, content: 'What is the weather in Paris?' }] };

/** Count ASK (plus `extra`) with the Anthropic SDK on the provider `headers` name. */
async function countMessages(headers: Record<string, string>, model: string, extra: Partial<Anthropic.MessageCountTokensParams> = {}) {
  const { data, response } = await anthropicClient(headers)
    .messages.countTokens({ model, ...ASK, ...extra })
    .withResponse();
  return { tokens: data.input_tokens, method: response.headers.get(METHOD), provider: response.headers.get('x-gateway-provider') };
}

describe('POST /v1/messages/count_tokens (@anthropic-ai/sdk)', () => {
  it('OpenAI: the model tokenizer, with OpenAI chat framing; no provider call', async () => {
    // o200k_base: "Be brief." is 3 tokens, "What is the weather in Paris?" 7, "system" and
    // "user" 1 each; each message adds 3, the reply priming 3: (1+3+3) + (1+7+3) + 3 = 21.
    expect(await countMessages({ 'x-gateway-provider': '@t-openai' }, 'gpt-4o-mini')).toEqual({ tokens: 21, method: 'tokenizer', provider: 'openai' });
    const withTool = await countMessages({ 'x-gateway-provider': '@t-openai' }, 'gpt-4o-mini', { tools: [weatherTool] });
    expect(withTool.tokens).toBeGreaterThan(21 + 10);
    expect(fakes.openai.count()).toBe(0);
  });

  it('an OpenAI model id on another provider is counted by its tokenizer; override_params name the model counted', async () => {
    const config = { provider: 'openrouter', api_key: 'or-key', override_params: { model: 'openai/gpt-4o-mini' } };
    const counted = await countMessages({ 'x-gateway-config': JSON.stringify(config) }, 'anything');
    expect(counted).toEqual({ tokens: 21, method: 'tokenizer', provider: 'openrouter' });
  });

  it('a fallback config counts on its first target, with the override_params it inherits', async () => {
    const config = {
      strategy: { mode: 'fallback' },
      override_params: { model: 'gemini-2.5-pro' },
      targets: [{ provider: '@t-gemini' }, { provider: '@t-openai' }],
    };
    const counted = await countMessages({ 'x-gateway-config': JSON.stringify(config) }, 'gpt-4o-mini');
    expect(counted).toEqual({ tokens: 8, method: 'provider', provider: 'google' });
    expect(fakes.gemini.last()!.path).toBe('/v1beta/models/gemini-2.5-pro:countTokens');
    expect(fakes.openai.count()).toBe(0);
  });

  it('Anthropic: passed through to its own count_tokens', async () => {
    const counted = await countMessages({ 'x-gateway-provider': '@t-claude' }, 'claude-sonnet-4-5');
    // The fake counts words: "Be brief." 2 + "What is the weather in Paris?" 6.
    expect(counted).toEqual({ tokens: 8, method: 'provider', provider: 'anthropic' });
    expect(fakes.anthropic.last()!.path).toBe('/v1/messages/count_tokens');
  });

  it("Bedrock: its CountTokens API, signed, for the inference profile's foundation model", async () => {
    const counted = await countMessages({ 'x-gateway-provider': '@t-bedrock' }, 'us.anthropic.claude-3-5-sonnet-20240620-v1:0', { tools: [weatherTool] });
    // Words 8, plus one per tool (the fake's rule): the tools reached it as a Converse toolConfig.
    expect(counted).toEqual({ tokens: 9, method: 'provider', provider: 'bedrock' });
    const seen = fakes.bedrock.last()!;
    expect(seen.path).toBe('/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/count-tokens');
    expect(seen.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/bedrock\/aws4_request/);
    expect(seen.body).toMatchObject({ input: { converse: { system: [{ text: 'Be brief.' }], messages: [{ role: 'user' }] } } });
  });

  it('Gemini: its countTokens on the whole GenerateContentRequest', async () => {
    const counted = await countMessages({ 'x-gateway-provider': '@t-gemini' }, 'gemini-2.5-flash');
    expect(counted).toEqual({ tokens: 8, method: 'provider', provider: 'google' });
    const seen = fakes.gemini.last()!;
    expect(seen.path).toBe('/v1beta/models/gemini-2.5-flash:countTokens');
    expect(seen.body).toMatchObject({ generateContentRequest: { model: 'models/gemini-2.5-flash', systemInstruction: { parts: [{ text: 'Be brief.' }] } } });
  });

  it('Vertex AI: its countTokens, with the request fields at the top level', async () => {
    const vertex = {
      'x-gateway-provider': 'vertex-ai',
      authorization: 'Bearer ya29.token',
      'x-gateway-vertex-project-id': 'my-project',
      'x-gateway-vertex-region': 'us-central1',
      'x-gateway-custom-host': `${fakes.gemini.url}/v1`,
    };
    expect(await countMessages(vertex, 'gemini-2.5-flash')).toEqual({ tokens: 8, method: 'provider', provider: 'vertex-ai' });
    const seen = fakes.gemini.last()!;
    expect(seen.path).toBe('/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.5-flash:countTokens');
    expect(seen.headers.authorization).toBe('Bearer ya29.token');
    expect(seen.body).toMatchObject({ systemInstruction: { parts: [{ text: 'Be brief.' }] }, contents: [{ role: 'user' }] });
  });

  it('any other provider: the estimate, a quarter of the characters plus the framing', async () => {
    const counted = await countMessages({ 'x-gateway-provider': '@t-cohere' }, 'command-r');
    // Characters: "system" 6 + "Be brief." 9 + "user" 4 + "What is the weather in Paris?" 29 = 48 -> 12;
    // framing 3 per message and 3 for the reply: 12 + 6 + 3 = 21.
    expect(counted).toEqual({ tokens: 21, method: 'estimate', provider: 'cohere' });
    expect(fakes.cohere.count()).toBe(0);
  });

  it("a provider's refusal keeps its status and message, in Anthropic's shape", async () => {
    fakes.gemini.setBehaviour({ status: 400, message: 'The model gemini-nope was not found.' });
    const err = await anthropicClient({ 'x-gateway-provider': '@t-gemini' })
      .messages.countTokens({ model: 'gemini-2.5-flash', ...ASK })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AnthropicBadRequest);
    expect((err as AnthropicBadRequest).error).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'The model gemini-nope was not found.' },
    });
  });

  it("the request's timeout bounds the provider's count: 408 in Anthropic's shape", async () => {
    fakes.gemini.setBehaviour({ latencyMs: 5_000 });
    const started = Date.now();
    const err = await anthropicClient({ 'x-gateway-provider': '@t-gemini', 'x-gateway-request-timeout': '300' })
      .messages.countTokens({ model: 'gemini-2.5-flash', ...ASK })
      .catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect((err as { status?: number }).status).toBe(408);
    expect((err as AnthropicBadRequest).error).toMatchObject({ type: 'error', error: { type: 'timeout_error' } });
  });

  it("bad input: a 400 in Anthropic's shape naming the field, before any provider is called", async () => {
    const err = await anthropicClient({ 'x-gateway-provider': '@t-gemini' })
      .messages.countTokens({ model: 'gemini-2.5-flash', messages: [] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AnthropicBadRequest);
    const body = (err as AnthropicBadRequest).error as { type: string; error: { type: string; message: string } };
    expect(body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(body.error.message).toContain('messages');
    expect(fakes.gemini.count()).toBe(0);
  });

  it("a coding agent's key-only count (the gateway key as x-api-key, its default config) on an OpenAI-backed key, `?beta=true` too", async () => {
    const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'agent-count', default_config: { provider: '@t-openai' } } });
    expect(created.status, created.text).toBe(200);
    const agent = new Anthropic({ baseURL: gw.url, apiKey: created.body.secret, maxRetries: 0 });
    const { data, response } = await agent.beta.messages.countTokens({ model: 'gpt-4o-mini', ...ASK }).withResponse();
    expect(data.input_tokens).toBe(21);
    expect(response.headers.get(METHOD)).toBe('tokenizer');
    // Claude Code's own traffic: `/v1/messages/count_tokens?beta=true`.
    const raw = await call(gw, 'POST', '/v1/messages/count_tokens?beta=true', {
      key: null,
      headers: { 'x-api-key': created.body.secret, 'anthropic-version': '2023-06-01', 'anthropic-beta': 'token-counting-2024-11-01' },
      body: { model: 'gpt-4o-mini', ...ASK },
    });
    expect(raw.status, raw.text).toBe(200);
    expect(raw.body).toEqual({ input_tokens: 21 });
  });

  it('the request log records the route, provider, model and method, at no cost', async () => {
    const traceId = `count-${Date.now()}`;
    await countMessages({ 'x-gateway-provider': '@t-openai', 'x-gateway-trace-id': traceId }, 'gpt-4o-mini');
    const [record] = (await logsOf(gw, `trace_id=${traceId}`)).body.data;
    expect(record).toMatchObject({
      route: 'messages.count_tokens',
      provider: 'openai',
      managed_provider: 't-openai',
      model: 'gpt-4o-mini',
      status: 200,
      token_count_method: 'tokenizer',
    });
  });
});

describe('POST /v1/responses/input_tokens (openai)', () => {
  const input = 'What is the weather in Paris?';

  it('OpenAI: passed through to its own count', async () => {
    const { data, response } = await openaiClient({ 'x-gateway-provider': '@t-openai' })
      .responses.inputTokens.count({ model: 'gpt-4o-mini', instructions: 'Be brief.', input })
      .withResponse();
    expect(data).toEqual({ object: 'response.input_tokens', input_tokens: 8 });
    expect(response.headers.get(METHOD)).toBe('provider');
    expect(fakes.openai.last()!.path).toBe('/v1/responses/input_tokens');
    const traceId = `input-tokens-${Date.now()}`;
    await openaiClient({ 'x-gateway-provider': '@t-openai', 'x-gateway-trace-id': traceId }).responses.inputTokens.count({ model: 'gpt-4o-mini', input });
    const [record] = (await logsOf(gw, `trace_id=${traceId}`)).body.data;
    expect(record).toMatchObject({ route: 'responses.input_tokens', provider: 'openai', status: 200, token_count_method: 'provider', cost_usd: 0 });
  });

  it("Anthropic: translated and counted by Anthropic's count_tokens", async () => {
    const { data, response } = await openaiClient({ 'x-gateway-provider': '@t-claude' })
      .responses.inputTokens.count({ model: 'claude-sonnet-4-5', instructions: 'Be brief.', input })
      .withResponse();
    expect(data).toEqual({ object: 'response.input_tokens', input_tokens: 8 });
    expect(response.headers.get(METHOD)).toBe('provider');
    const seen = fakes.anthropic.last()!;
    expect(seen.path).toBe('/v1/messages/count_tokens');
    // count_tokens refuses the fields it does not take, max_tokens first.
    expect(Object.keys(seen.body as object).sort()).toEqual(['messages', 'model', 'system']);
  });

  it('another provider: the estimate', async () => {
    const { data, response } = await openaiClient({ 'x-gateway-provider': '@t-cohere' })
      .responses.inputTokens.count({ model: 'command-r', instructions: 'Be brief.', input })
      .withResponse();
    expect(data).toEqual({ object: 'response.input_tokens', input_tokens: 21 });
    expect(response.headers.get(METHOD)).toBe('estimate');
  });

  it("bad input: a 400 in OpenAI's shape naming the field", async () => {
    const err = await openaiClient({ 'x-gateway-provider': '@t-claude' })
      .responses.inputTokens.count({ model: 'claude-sonnet-4-5', input: 42 as unknown as string })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAIBadRequest);
    expect((err as OpenAIBadRequest).param).toBe('input');
    expect(fakes.anthropic.count()).toBe(0);
  });
});
