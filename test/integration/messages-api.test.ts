import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic, { APIError, BadRequestError } from '@anthropic-ai/sdk';
import type { LocalGateway } from '../../infra/local/server';
import { startAllFakes, startWatsonxFake, type AllFakes, type FakeServer } from '../fakes';
import { FAKE_AWS, manageFakes } from '../support/managed-fakes';
import { call, startTestGateway } from '../support/gateway';

// The Anthropic Messages API on every provider with chat, through the real @anthropic-ai/sdk:
// Anthropic passed through natively, every other provider translated through chat.
let gw: LocalGateway;
let fakes: AllFakes;

beforeAll(async () => {
  fakes = await startAllFakes({}, { credentials: FAKE_AWS });
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0' } });
  await manageFakes(gw, fakes, 'm');
});
afterAll(async () => {
  await gw?.stop();
  await fakes?.close();
});
beforeEach(() => fakes.reset());

const MODELS: Record<string, string> = {
  'm-gemini': 'gemini-2.5-flash',
  'm-bedrock': 'anthropic.claude-3-5-sonnet-20240620-v1:0',
  'm-openai': 'gpt-4o-mini',
};
const FAKE_OF: Record<string, () => FakeServer> = {
  'm-gemini': () => fakes.gemini,
  'm-bedrock': () => fakes.bedrock,
  'm-openai': () => fakes.openai,
};

const client = (slug: string, headers: Record<string, string> = {}) =>
  new Anthropic({
    baseURL: gw.url,
    apiKey: 'unused',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': `@${slug}`, ...headers },
  });

async function logsOf(traceId: string): Promise<any[]> {
  let logs: any[] = [];
  for (let i = 0; i < 50 && !logs.length; i++) {
    logs = (await call(gw, 'GET', `/v1/logs?trace_id=${traceId}`)).body.data ?? [];
    if (!logs.length) await new Promise((r) => setTimeout(r, 100));
  }
  return logs;
}

const weatherTool: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Current weather of a city',
  input_schema: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
};
const askWeather: Anthropic.MessageParam = { role: 'user', content: 'What is the weather in Paris?' };

describe.each(Object.keys(MODELS))('%s, translated', (slug) => {
  const model = () => MODELS[slug]!;

  it('messages.create answers a text message', async () => {
    const message = await client(slug).messages.create({
      model: model(),
      max_tokens: 100,
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Say hi' }],
    });
    expect(message.type).toBe('message');
    expect(message.role).toBe('assistant');
    expect(message.id).toMatch(/^msg_/);
    expect(message.stop_reason).toBe('end_turn');
    expect(message.content).toEqual([{ type: 'text', text: 'echo: Say hi' }]);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
    expect(FAKE_OF[slug]!().count()).toBe(1);
  });

  it('messages.create: a tool call, then its result, round trip', async () => {
    const api = client(slug);
    const first = await api.messages.create({ model: model(), max_tokens: 200, tools: [weatherTool], messages: [askWeather] });
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    expect(use).toMatchObject({ name: 'get_weather', input: { location: 'Paris' } });
    expect(use.id).toBeTruthy();

    const second = await api.messages.create({
      model: model(),
      max_tokens: 200,
      tools: [weatherTool],
      messages: [
        askWeather,
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny, 21C' }] },
      ],
    });
    expect(second.stop_reason).toBe('end_turn');
    expect(second.content).toEqual([{ type: 'text', text: 'tool said: sunny, 21C' }]);
  });

  it('messages.stream().finalMessage() streams text', async () => {
    const stream = client(slug).messages.stream({ model: model(), max_tokens: 100, messages: [{ role: 'user', content: 'Say hello there' }] });
    let deltas = '';
    stream.on('text', (t) => (deltas += t));
    const message = await stream.finalMessage();
    expect(deltas).toBe('echo: Say hello there');
    expect(message.content).toEqual([{ type: 'text', text: 'echo: Say hello there' }]);
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage.output_tokens).toBeGreaterThan(0);
  });

  it('messages.stream() with a tool: the tool_use block arrives whole', async () => {
    const stream = client(slug).messages.stream({ model: model(), max_tokens: 200, tools: [weatherTool], messages: [askWeather] });
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe('tool_use');
    const use = message.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    expect(use).toMatchObject({ name: 'get_weather', input: { location: 'Paris' } });
  });

  it('a provider failure mid-stream ends with an error event: the SDK rejects', async () => {
    FAKE_OF[slug]!().setBehaviour({ streamError: true });
    const stream = client(slug).messages.stream({
      model: model(),
      max_tokens: 100,
      messages: [{ role: 'user', content: 'one two three four five six seven eight' }],
    });
    const err = await stream.finalMessage().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect(String((err as Error).message)).toMatch(/error/i);
  });
});

describe('errors in the Anthropic shape', () => {
  it('an invalid body: 400 naming the field', async () => {
    const res = await call(gw, 'POST', '/v1/messages', {
      headers: { 'x-gateway-provider': '@m-gemini' },
      body: { model: MODELS['m-gemini'], messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('error');
    expect(res.body.error.type).toBe('invalid_request_error');
    expect(res.body.error.message).toContain('max_tokens');
    expect(fakes.gemini.count()).toBe(0);
  });

  it('the SDK raises a typed BadRequestError for it', async () => {
    const err = await client('m-gemini')
      .messages.create({ model: MODELS['m-gemini']!, max_tokens: 0, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect((err as BadRequestError).error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it("a provider's error keeps its status and message, in Anthropic's shape", async () => {
    fakes.gemini.setBehaviour({ status: 429, message: 'Quota exceeded for gemini' });
    const res = await call(gw, 'POST', '/v1/messages', {
      headers: { 'x-gateway-provider': '@m-gemini' },
      body: { model: MODELS['m-gemini'], max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: 'Quota exceeded for gemini' } });
  });

  it("a watsonx error ({errors:[{code, message}]}) keeps its message, in Anthropic's shape", async () => {
    const watsonx = await startWatsonxFake({ apiKey: 'ibm-key' });
    try {
      watsonx.setBehaviour({ status: 429, message: 'watsonx quota used up' });
      const res = await call(gw, 'POST', '/v1/messages', {
        headers: {
          'x-gateway-provider': 'watsonx',
          authorization: 'Bearer ibm-key',
          'x-gateway-watsonx-project-id': 'proj-messages',
          'x-gateway-watsonx-iam-url': `${watsonx.url}/identity/token`,
          'x-gateway-custom-host': watsonx.url,
        },
        body: { model: 'ibm/granite-3-8b-instruct', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
      });
      expect(res.status, res.text).toBe(429);
      expect(res.body).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: 'watsonx quota used up' } });
    } finally {
      await watsonx.close();
    }
  });

  it("the gateway's own errors too (no provider named)", async () => {
    const res = await call(gw, 'POST', '/v1/messages', { body: { model: 'x', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] } });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('error');
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', message: expect.stringContaining('No provider given') });
  });
});

describe('Anthropic, passed through', () => {
  const body = {
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
    messages: [{ role: 'user', content: 'Say hi' }],
  };

  it('the fake receives the body unchanged, with the caller anthropic-version and anthropic-beta', async () => {
    const raw = JSON.stringify(body);
    const res = await call(gw, 'POST', '/v1/messages', {
      headers: { 'x-gateway-provider': '@m-claude', 'anthropic-version': '2023-06-01', 'anthropic-beta': 'prompt-caching-2024-07-31' },
      body: raw,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ type: 'message', content: [{ type: 'text', text: 'echo: Say hi' }] });
    const received = fakes.anthropic.last()!;
    expect(received.path).toBe('/v1/messages');
    expect(received.rawBody.toString('utf8')).toBe(raw);
    expect(received.headers['anthropic-beta']).toBe('prompt-caching-2024-07-31');
    expect(received.headers['anthropic-version']).toBe('2023-06-01');
    expect(received.headers['x-api-key']).toBe('sk-ant');
    expect(res.headers.get('x-gateway-provider')).toBe('anthropic');
  });

  it('messages.create and messages.stream through the SDK', async () => {
    const api = client('m-claude');
    const message = await api.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 200, tools: [weatherTool], messages: [askWeather] });
    expect(message.stop_reason).toBe('tool_use');
    const streamed = await api.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Say hi' }] }).finalMessage();
    expect(streamed.content.at(-1)).toEqual({ type: 'text', text: 'echo: Say hi' });
    expect(fakes.anthropic.count('/v1/messages')).toBe(2);
  });

  it.each([false, true])('the request log names the messages route and has the usage (stream: %s)', async (stream) => {
    const traceId = `trace-messages-${stream}-${Date.now()}`;
    const api = client('m-claude', { 'x-gateway-trace-id': traceId });
    const params = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user' as const, content: 'Say hi to me' }] };
    const message = stream ? await api.messages.stream(params).finalMessage() : await api.messages.create(params);
    const logs = await logsOf(traceId);
    expect(logs[0]).toMatchObject({ route: 'messages', provider: 'anthropic', status: 200, stream });
    expect(logs[0].usage).toEqual({
      prompt_tokens: message.usage.input_tokens,
      completion_tokens: message.usage.output_tokens,
      total_tokens: message.usage.input_tokens + message.usage.output_tokens,
    });
    expect(logs[0].usage.completion_tokens).toBeGreaterThan(0);
  });

  it('with x-gateway-api-key sent, x-api-key is the Anthropic key (a raw provider, no managed one)', async () => {
    const api = new Anthropic({
      baseURL: gw.url,
      apiKey: 'sk-ant-caller-key',
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': 'anthropic', 'x-gateway-custom-host': `${fakes.anthropic.url}/v1` },
    });
    const message = await api.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Say hi' }] });
    expect(message.content).toEqual([{ type: 'text', text: 'echo: Say hi' }]);
    expect(fakes.anthropic.last()!.headers['x-api-key']).toBe('sk-ant-caller-key');
  });
});

describe('configs: fallback across providers, guardrails', () => {
  const configured = (config: unknown) =>
    new Anthropic({
      baseURL: gw.url,
      apiKey: 'unused',
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-config': JSON.stringify(config) },
    });

  it('a mixed config falls back from Gemini to Anthropic, translated', async () => {
    fakes.gemini.setBehaviour({ status: 500 });
    const api = configured({
      strategy: { mode: 'fallback' },
      targets: [{ provider: '@m-gemini' }, { provider: '@m-claude', override_params: { model: 'claude-sonnet-4-5' } }],
    });
    const { data: message, response } = await api.messages
      .create({ model: MODELS['m-gemini']!, max_tokens: 64, messages: [{ role: 'user', content: 'Say hi' }] })
      .withResponse();
    expect(message.content).toEqual([{ type: 'text', text: 'echo: Say hi' }]);
    expect(response.headers.get('x-gateway-provider')).toBe('anthropic');
    expect(fakes.gemini.count()).toBe(1);
    expect(fakes.anthropic.count('/v1/messages')).toBe(1);
  });

  it('guardrails apply on Anthropic too: an input guardrail refuses before the provider is called (Anthropic-shaped 446)', async () => {
    const guardrail = await call(gw, 'POST', '/v1/guardrails', {
      body: { name: 'Never emails', checks: [{ id: 'default.piiRegex', parameters: { categories: ['email'] } }], actions: { onFail: 'block', deny: true } },
    });
    expect(guardrail.status, guardrail.text).toBe(200);
    const blocked = await call(gw, 'POST', '/v1/messages', {
      headers: { 'x-gateway-config': JSON.stringify({ provider: '@m-claude', input_guardrails: [guardrail.body.id] }) },
      body: { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'mail me at someone@example.com' }] },
    });
    expect(blocked.status).toBe(446);
    expect(blocked.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.any(String) } });
    expect(fakes.anthropic.count()).toBe(0);

    // An output guardrail judges a streamed answer: the stream ends with an error event.
    const api = configured({ provider: '@m-gemini', output_guardrails: [guardrail.body.id] });
    const stream = api.messages.stream({ model: MODELS['m-gemini']!, max_tokens: 64, messages: [{ role: 'user', content: 'mail me at someone@example.com' }] });
    const err = await stream.finalMessage().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect(fakes.gemini.count()).toBe(1);
  });
});

describe('rate limits', () => {
  it('a tokens policy counts the usage of streamed Anthropic pass-through answers, then refuses in Anthropic shape', async () => {
    // A fresh workspace, so no other test's traffic counts.
    const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'messages-tokens' } });
    const key = (await call(gw, 'POST', '/v1/api-keys', { body: { name: 'k', workspace_id: ws.body.id, scopes: ['admin', 'gateway'] } })).body.secret;
    await call(gw, 'POST', '/v1/providers', {
      key,
      body: { slug: 'claude', provider: 'anthropic', api_key: 'sk-ant', custom_host: `${fakes.anthropic.url}/v1` },
    });
    const policy = await call(gw, 'POST', '/v1/policies/rate-limits', { key, body: { conditions: [], group_by: [], type: 'tokens', unit: 'rpd', value: 12 } });
    expect(policy.status, policy.text).toBe(200);
    const api = new Anthropic({
      baseURL: gw.url,
      apiKey: 'unused',
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-api-key': key, 'x-gateway-provider': '@claude' },
    });
    const first = await api.messages
      .stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'one two three four five six seven' }] })
      .finalMessage();
    expect(first.usage.input_tokens + first.usage.output_tokens).toBeGreaterThanOrEqual(12);
    // Usage is recorded after each response; poll until the window is spent.
    let res = { status: 200, body: undefined as any };
    for (let i = 0; i < 40 && res.status === 200; i++) {
      res = await call(gw, 'POST', '/v1/messages', {
        key,
        headers: { 'x-gateway-provider': '@claude', 'anthropic-version': '2023-06-01' },
        body: { model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'more' }] },
      });
      if (res.status === 200) await new Promise((r) => setTimeout(r, 50));
    }
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
  });
});

describe('count_tokens', () => {
  it('Anthropic: passed through', async () => {
    const counted = await client('m-claude').messages.countTokens({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'one two three' }] });
    expect(counted.input_tokens).toBe(3);
    expect(fakes.anthropic.last()!.path).toBe('/v1/messages/count_tokens');
  });

  it("Gemini: counted by Gemini's own countTokens (every provider: token-count.test.ts)", async () => {
    const counted = await client('m-gemini').messages.countTokens({ model: MODELS['m-gemini']!, messages: [{ role: 'user', content: 'one two three' }] });
    expect(counted.input_tokens).toBe(3);
    expect(fakes.gemini.last()!.path).toBe('/v1beta/models/gemini-2.5-flash:countTokens');
  });
});

describe('a client that sets only its API key', () => {
  it('x-api-key = the gateway key; its default config names a managed Gemini provider', async () => {
    const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'agent', default_config: { provider: '@m-gemini' } } });
    expect(created.status, created.text).toBe(200);
    const api = new Anthropic({ baseURL: gw.url, apiKey: created.body.secret, maxRetries: 0 });
    const stream = api.messages.stream({ model: MODELS['m-gemini']!, max_tokens: 200, tools: [weatherTool], messages: [askWeather] });
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe('tool_use');
    expect(fakes.gemini.count()).toBe(1);
    expect(JSON.stringify(fakes.gemini.last()!.headers)).not.toContain(created.body.secret);
  });
});
