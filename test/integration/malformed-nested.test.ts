import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { type FakeServer, startAnthropicFake, startBedrockFake, startCohereFake, startGeminiFake, startOpenAIFake } from '../fakes';
import { startTestGateway } from '../support/gateway';
import { answerProblem, sweep } from '../support/sweep';
import { pathsOf, REMOVED, spoil, spoiled, WRONG, wrongAt } from '../support/spoil';

/**
 * A full, valid request of each model dialect (chat, Responses, Messages, Gemini), with every
 * part a translator reads (system text, images, tool calls and their results, tools, a forced
 * tool choice, a structured-output schema), spoiled at one place at a time, however deep: the
 * value removed, or replaced by null, a number, a string, a list or an object. Each spoiled
 * request goes to a provider of each family (OpenAI, Anthropic, Gemini, Bedrock), so it meets
 * the dialect's own checks and every translation. The answer is a 4xx error object, or a
 * success; never a 5xx (docs/api.md, "Errors").
 */

const AWS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const WAV = 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=';
const PDF = 'JVBERi0xLjQKJSVFT0YK';
const CITY_SCHEMA = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

/** Full requests; `refusedBy`: the providers that cannot take one of its parts (a 400 naming it). */
const VALID: Array<{ path: string; body: Record<string, unknown>; refusedBy?: string[] }> = [
  {
    path: '/v1/chat/completions',
    body: {
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'be brief' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}`, detail: 'low' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
        { role: 'user', content: 'thanks', name: 'bob' },
      ],
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'weather', parameters: CITY_SCHEMA } }],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object', properties: { a: { type: 'string' } } } } },
      stop: ['END'],
      max_tokens: 50,
      temperature: 0.5,
      metadata: { team: 'a' },
    },
  },
  {
    path: '/v1/chat/completions',
    body: {
      model: 'gpt-4o-mini',
      messages: [
        { role: 'developer', content: [{ type: 'text', text: 'be brief' }] },
        {
          role: 'user',
          content: [
            { type: 'input_audio', input_audio: { data: WAV, format: 'wav' } },
            { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF}`, filename: 'a.pdf' } },
            { type: 'text', text: 'read' },
          ],
        },
        { role: 'assistant', content: [{ type: 'text', text: 'ok' }], refusal: null },
        { role: 'user', content: 'go' },
      ],
      stream: true,
      stream_options: { include_usage: true },
      n: 1,
      seed: 1,
      tools: [{ type: 'function', function: { name: 'noop', parameters: { type: 'object', properties: {} }, strict: true } }],
      tool_choice: 'auto',
      parallel_tool_calls: false,
      response_format: { type: 'json_object' },
      reasoning_effort: 'low',
    },
    refusedBy: ['anthropic', 'bedrock', 'cohere'],
  },
  {
    path: '/v1/responses',
    body: {
      model: 'gpt-4o-mini',
      instructions: 'be brief',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'look' },
            { type: 'input_image', image_url: `data:image/png;base64,${PNG}`, detail: 'low' },
          ],
        },
        { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'It is sunny.' }] },
        { role: 'user', content: 'thanks' },
      ],
      tools: [{ type: 'function', name: 'get_weather', description: 'weather', parameters: CITY_SCHEMA, strict: false }],
      tool_choice: { type: 'function', name: 'get_weather' },
      text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object', properties: { a: { type: 'string' } } } } },
      reasoning: { effort: 'low' },
      max_output_tokens: 50,
      metadata: { team: 'a' },
      store: false,
    },
  },
  {
    path: '/v1/responses',
    body: {
      model: 'gpt-4o-mini',
      input: [
        { type: 'message', role: 'developer', content: 'be brief' },
        {
          role: 'user',
          content: [
            { type: 'input_file', file_data: `data:application/pdf;base64,${PDF}`, filename: 'a.pdf' },
            { type: 'input_text', text: 'read' },
          ],
        },
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'thought' }] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'ok', annotations: [] }] },
        { role: 'user', content: 'go' },
      ],
      tools: [{ type: 'function', name: 'noop', parameters: { type: 'object', properties: {} } }],
      tool_choice: 'auto',
      text: { format: { type: 'json_object' } },
      parallel_tool_calls: true,
      truncation: 'auto',
      stream: true,
      store: false,
    },
    refusedBy: ['cohere'],
  },
  {
    path: '/v1/messages',
    body: {
      model: 'claude-3-5-haiku-latest',
      max_tokens: 50,
      system: [{ type: 'text', text: 'be brief' }],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'checking' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'sunny' }] }] },
      ],
      tools: [{ name: 'get_weather', description: 'weather', input_schema: CITY_SCHEMA }],
      tool_choice: { type: 'tool', name: 'get_weather' },
      stop_sequences: ['END'],
      temperature: 0.5,
      metadata: { user_id: 'u1' },
    },
  },
  {
    path: '/v1/messages',
    body: {
      model: 'claude-3-5-haiku-latest',
      max_tokens: 2048,
      system: 'be brief',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } },
            { type: 'text', text: 'read', cache_control: { type: 'ephemeral' } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hmm', signature: 'sig' },
            { type: 'text', text: 'ok' },
          ],
        },
        { role: 'user', content: 'go' },
      ],
      thinking: { type: 'enabled', budget_tokens: 1024 },
      tools: [{ name: 'noop', input_schema: { type: 'object' } }],
      tool_choice: { type: 'auto' },
      top_k: 5,
      stream: true,
    },
    refusedBy: ['cohere'],
  },
  {
    path: '/v1beta/models/gemini-2.0-flash:generateContent',
    body: {
      systemInstruction: { parts: [{ text: 'be brief' }] },
      contents: [
        {
          role: 'user',
          parts: [{ text: 'look' }, { inlineData: { mimeType: 'image/png', data: PNG } }],
        },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { result: 'sunny' } } }] },
      ],
      tools: [
        { functionDeclarations: [{ name: 'get_weather', description: 'weather', parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } } } }] },
      ],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
      generationConfig: {
        temperature: 0.5,
        maxOutputTokens: 50,
        stopSequences: ['END'],
        responseMimeType: 'application/json',
        responseSchema: { type: 'OBJECT', properties: { a: { type: 'STRING' } } },
      },
      safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }],
    },
  },
  {
    path: '/v1/embeddings',
    body: { model: 'text-embedding-3-small', input: ['a', 'b'], dimensions: 8, encoding_format: 'float', user: 'u1' },
    // Bedrock embeds with Titan and Cohere models only.
    refusedBy: ['anthropic', 'bedrock'],
  },
  {
    path: '/v1/rerank',
    body: { model: 'rerank-v3.5', query: 'q', documents: ['a', { text: 'b' }], top_n: 1, return_documents: true },
    refusedBy: ['openai', 'anthropic', 'google'],
  },
  {
    path: '/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse',
    body: {
      contents: [
        { role: 'user', parts: [{ inlineData: { mimeType: 'application/pdf', data: PDF } }, { text: 'read' }] },
        { role: 'model', parts: [{ text: 'hmm', thought: true }, { text: 'ok' }] },
        { role: 'user', parts: [{ text: 'go' }] },
      ],
      generationConfig: { candidateCount: 1, topK: 5, topP: 0.9, thinkingConfig: { thinkingBudget: 512 }, responseMimeType: 'text/plain' },
    },
    refusedBy: ['cohere'],
  },
];

/** The token-count routes take the bodies of their model routes. */
const firstOf = (path: string) => VALID.find((v) => v.path === path)!.body;
const { max_tokens: _maxTokens, ...countedMessages } = firstOf('/v1/messages');
VALID.push({ path: '/v1/responses/input_tokens', body: firstOf('/v1/responses') }, { path: '/v1/messages/count_tokens', body: countedMessages });

let gw: LocalGateway;
let openai: FakeServer;
let anthropic: FakeServer;
let gemini: FakeServer;
let bedrock: FakeServer;
let cohere: FakeServer;
beforeAll(async () => {
  [gw, openai, anthropic, gemini, bedrock, cohere] = await Promise.all([
    startTestGateway(),
    startOpenAIFake(),
    startAnthropicFake(),
    startGeminiFake(),
    startBedrockFake({ credentials: AWS }),
    startCohereFake(),
  ]);
});
afterAll(async () => {
  await Promise.all([gw?.stop(), openai?.close(), anthropic?.close(), gemini?.close(), bedrock?.close(), cohere?.close()]);
});

const PROVIDERS: Record<string, () => Record<string, string>> = {
  openai: () => ({ 'x-gateway-provider': 'openai', authorization: 'Bearer sk-nested', 'x-gateway-custom-host': `${openai.url}/v1` }),
  anthropic: () => ({ 'x-gateway-provider': 'anthropic', authorization: 'Bearer sk-ant-nested', 'x-gateway-custom-host': `${anthropic.url}/v1` }),
  google: () => ({ 'x-gateway-provider': 'google', authorization: 'Bearer gemini-key', 'x-gateway-custom-host': `${gemini.url}/v1beta` }),
  bedrock: () => ({
    'x-gateway-provider': 'bedrock',
    'x-gateway-aws-access-key-id': AWS.accessKeyId,
    'x-gateway-aws-secret-access-key': AWS.secretAccessKey,
    'x-gateway-aws-region': 'us-east-1',
    'x-gateway-custom-host': bedrock.url,
  }),
  cohere: () => ({ 'x-gateway-provider': 'cohere', authorization: 'Bearer co-key', 'x-gateway-custom-host': cohere.url }),
};

interface Probe {
  path: string;
  provider: string;
  body: unknown;
  what: string;
  /** An inline config instead of the provider's headers. */
  config?: Record<string, unknown>;
}

async function send(probe: Probe): Promise<string | undefined> {
  const res = await fetch(gw.url + probe.path, {
    method: 'POST',
    headers: {
      'x-gateway-api-key': gw.adminKey,
      'content-type': 'application/json',
      ...(probe.config ? { 'x-gateway-config': JSON.stringify(probe.config) } : PROVIDERS[probe.provider]!()),
    },
    body: JSON.stringify(probe.body),
  });
  const text = await res.text();
  return answerProblem(res.status, text, `${res.status} ${probe.path} via ${probe.provider}, ${probe.what} -> ${text.slice(0, 300)}`);
}

const failuresOf = (probes: Probe[]) => sweep(probes, send);

/** Each provider as a config target (what `override_params` sit on). */
const TARGETS: Record<string, () => Record<string, unknown>> = {
  openai: () => ({ provider: 'openai', api_key: 'sk-nested', custom_host: `${openai.url}/v1` }),
  anthropic: () => ({ provider: 'anthropic', api_key: 'sk-ant-nested', custom_host: `${anthropic.url}/v1` }),
  google: () => ({ provider: 'google', api_key: 'gemini-key', custom_host: `${gemini.url}/v1beta` }),
  bedrock: () => ({
    provider: 'bedrock',
    aws_access_key_id: AWS.accessKeyId,
    aws_secret_access_key: AWS.secretAccessKey,
    aws_region: 'us-east-1',
    custom_host: bedrock.url,
  }),
  cohere: () => ({ provider: 'cohere', api_key: 'co-key', custom_host: cohere.url }),
};
/** Body parameters a config may override, the ones the gateway reads among them. */
const OVERRIDDEN = ['model', 'messages', 'tools', 'tool_choice', 'stream', 'input', 'max_tokens', 'response_format', 'stop', 'system', 'temperature', 'n'];

describe('a full model request spoiled at any depth, through each provider family', () => {
  it('the full requests succeed through every provider that can take them', async () => {
    const results = await Promise.all(
      VALID.flatMap(({ path, body, refusedBy = [] }) =>
        Object.keys(PROVIDERS).map(async (provider) => {
          const res = await fetch(gw.url + path, {
            method: 'POST',
            headers: { 'x-gateway-api-key': gw.adminKey, 'content-type': 'application/json', ...PROVIDERS[provider]!() },
            body: JSON.stringify(body),
          });
          const text = await res.text();
          const expected = refusedBy.includes(provider) ? 400 : 200;
          return res.status === expected && !/server_error|internal_error/.test(text)
            ? undefined
            : `${res.status} ${path} via ${provider}: ${text.slice(0, 300)}`;
        }),
      ),
    );
    expect(results.filter(Boolean)).toEqual([]);
  });

  it('each place spoiled: a 4xx error object or a success, never a 5xx', { timeout: 600_000 }, async () => {
    const providers = Object.keys(PROVIDERS);
    // A part left out of a chat message, content part, tool or tool call (three levels deep or
    // more) goes to every provider: the commonest mistake, and what a provider's translator
    // reads (the other dialects reach the providers translated to chat). Other removals and a quarter of the values of the wrong kind (rotating from
    // place to place) go to one provider each, the next in turn, so every place meets every provider.
    // MALFORMED_SWEEP=full gives every place every value, each to all providers.
    const full = process.env.MALFORMED_SWEEP === 'full';
    const probes: Probe[] = VALID.flatMap(({ path, body }) =>
      pathsOf(body).flatMap((at, p) =>
        (full ? WRONG : wrongAt(p, 4)).flatMap((wrong, k) =>
          (full || (wrong === REMOVED && at.length >= 3 && path === '/v1/chat/completions')
            ? providers
            : [providers[(p * WRONG.length + k) % providers.length]!]
          ).map((provider) => ({
            path,
            provider,
            body: spoil(body, at, wrong),
            what: spoiled(at, wrong),
          })),
        ),
      ),
    );
    expect(probes.length).toBeGreaterThan(1500);
    const failures = await failuresOf(probes);
    expect(failures, `${failures.length} of ${probes.length} answers`).toEqual([]);
  });

  it('a config overriding a parameter with a value of the wrong shape: a 4xx error object or a success, never a 5xx', { timeout: 120_000 }, async () => {
    const providers = Object.keys(TARGETS);
    const routes = [...new Map(VALID.map((v) => [v.path, v])).values()];
    const probes: Probe[] = routes.flatMap(({ path, body }, r) =>
      OVERRIDDEN.flatMap((key, i) =>
        WRONG.filter((w) => w !== REMOVED).map((wrong, k) => {
          const provider = providers[(r + i + k) % providers.length]!;
          return {
            path,
            provider,
            body,
            config: { ...TARGETS[provider]!(), override_params: { [key]: wrong } },
            what: spoiled(['override_params', key], wrong),
          };
        }),
      ),
    );
    const failures = await failuresOf(probes);
    expect(failures, `${failures.length} of ${probes.length} answers`).toEqual([]);
  });
});
