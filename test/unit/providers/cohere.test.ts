import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../functions/shared/errors';
import { cohere } from '../../../functions/providers/cohere';
import type { ChatRequest, ProviderTarget } from '../../../functions/providers/types';
import { contentOf, ctx, translateEveryWay } from './stream-helpers';

const target: ProviderTarget = { provider: 'cohere', apiKey: 'co-test' };
const chat = cohere.chat!;
const bodyOf = (req: ChatRequest) => JSON.parse(chat.request(req, target).body as string);

describe('cohere URLs and auth', () => {
  it('proxies under /v1 and calls the v2 API on the same host', () => {
    expect(cohere.baseUrl(target)).toBe('https://api.cohere.com/v1');
    const req = chat.request({ model: 'command-a-03-2025', messages: [{ role: 'user', content: 'hi' }] }, target);
    expect(req.url).toBe('https://api.cohere.com/v2/chat');
    expect(req.headers).toEqual({ 'content-type': 'application/json', authorization: 'Bearer co-test' });
    const custom = { ...target, customHost: 'https://cohere-proxy.example/v1/' };
    expect(cohere.baseUrl(custom)).toBe('https://cohere-proxy.example/v1');
    expect(cohere.embeddings!.request({ model: 'embed-v4.0', input: 'x' }, custom).url).toBe('https://cohere-proxy.example/v2/embed');
    expect(cohere.rerank!.request({ model: 'rerank-v3.5', query: 'q', documents: ['a'] }, { ...target, customHost: 'https://p.example/co' }).url).toBe(
      'https://p.example/co/v2/rerank',
    );
  });

  it('answers 400 without a key', () => {
    expect(() => chat.request({ model: 'm', messages: [] }, { provider: 'cohere' })).toThrow(GatewayError);
  });
});

describe('cohere chat request', () => {
  it('maps messages, tools and parameters', () => {
    const body = bodyOf({
      model: 'command-a-03-2025',
      stream: true,
      max_completion_tokens: 300,
      temperature: 0.3,
      top_p: 0.8,
      stop: ['\n\n'],
      seed: 42,
      frequency_penalty: 0.1,
      presence_penalty: 0.2,
      user: 'dropped',
      tool_choice: 'required',
      response_format: { type: 'json_object' },
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { location: { type: 'string' } } }, strict: true },
        },
      ],
      messages: [
        { role: 'developer', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather in Paris?' },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'get_weather_1byjy32y4hvq', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' } }],
        },
        { role: 'tool', tool_call_id: 'get_weather_1byjy32y4hvq', content: '18C' },
      ],
    });
    expect(body).toEqual({
      model: 'command-a-03-2025',
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather in Paris?' },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
          ],
        },
        {
          role: 'assistant',
          tool_calls: [{ id: 'get_weather_1byjy32y4hvq', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' } }],
        },
        { role: 'tool', tool_call_id: 'get_weather_1byjy32y4hvq', content: '18C' },
      ],
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } },
        },
      ],
      tool_choice: 'REQUIRED',
      response_format: { type: 'json_object' },
      max_tokens: 300,
      stop_sequences: ['\n\n'],
      temperature: 0.3,
      p: 0.8,
      seed: 42,
      frequency_penalty: 0.1,
      presence_penalty: 0.2,
      stream: true,
    });
  });

  it('maps tool_choice none/auto/named and json_schema', () => {
    const tools: ChatRequest['tools'] = [
      { type: 'function', function: { name: 'a' } },
      { type: 'function', function: { name: 'b' } },
    ];
    const m: ChatRequest['messages'] = [{ role: 'user', content: 'x' }];
    expect(bodyOf({ model: 'c', messages: m, tools, tool_choice: 'none' }).tool_choice).toBe('NONE');
    expect(bodyOf({ model: 'c', messages: m, tools, tool_choice: 'auto' }).tool_choice).toBeUndefined();
    const named = bodyOf({ model: 'c', messages: m, tools, tool_choice: { type: 'function', function: { name: 'b' } } });
    expect(named.tool_choice).toBe('REQUIRED');
    expect(named.tools).toEqual([{ type: 'function', function: { name: 'b' } }]);
    const schema = { type: 'object', properties: { n: { type: 'integer' } } };
    expect(bodyOf({ model: 'c', messages: m, response_format: { type: 'json_schema', json_schema: { name: 's', schema } } }).response_format).toEqual({
      type: 'json_object',
      json_schema: schema,
    });
    expect(() => bodyOf({ model: 'c', messages: m, n: 3 })).toThrow(GatewayError);
  });
});

describe('cohere chat response', () => {
  it('maps text, tool calls, finish reason and billed usage', () => {
    const out = chat.response(
      {
        id: 'c14c80c3-18eb-4519-9460-6c92edd8cfb4',
        finish_reason: 'TOOL_CALL',
        message: {
          role: 'assistant',
          tool_plan: 'I will look up the weather.',
          tool_calls: [{ id: 'get_weather_1byjy32y4hvq', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Toronto"}' } }],
        },
        usage: { billed_units: { input_tokens: 37, output_tokens: 28 }, tokens: { input_tokens: 1010, output_tokens: 61 } },
      },
      ctx(),
    );
    expect(out.id).toBe('c14c80c3-18eb-4519-9460-6c92edd8cfb4');
    expect(out.choices[0]).toEqual({
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        refusal: null,
        tool_calls: [{ id: 'get_weather_1byjy32y4hvq', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Toronto"}' } }],
      },
      logprobs: null,
      finish_reason: 'tool_calls',
    });
    expect(out.usage).toEqual({ prompt_tokens: 37, completion_tokens: 28, total_tokens: 65 });

    const text = chat.response(
      {
        id: 'x',
        finish_reason: 'MAX_TOKENS',
        message: {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hmm' },
            { type: 'text', text: 'Hello' },
          ],
        },
      },
      ctx(),
    );
    expect(text.choices[0]!.message.content).toBe('Hello');
    expect(text.choices[0]!.finish_reason).toBe('length');
  });
});

const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const textWire =
  ev('message-start', {
    id: '29f14a5a-11de-4cae-9800-25e4747408ea',
    delta: { message: { role: 'assistant', content: [], tool_plan: '', tool_calls: [], citations: [] } },
  }) +
  ev('content-start', { index: 0, delta: { message: { content: { type: 'text', text: '' } } } }) +
  ev('content-delta', { index: 0, delta: { message: { content: { text: 'Grüße ' } } } }) +
  ev('content-delta', { index: 0, delta: { message: { content: { text: 'aus 東京' } } } }) +
  ev('content-end', { index: 0 }) +
  ev('message-end', {
    delta: { finish_reason: 'COMPLETE', usage: { billed_units: { input_tokens: 5, output_tokens: 10 }, tokens: { input_tokens: 71, output_tokens: 10 } } },
  });

const toolWire =
  ev('message-start', { id: 'tool-msg-1', delta: { message: { role: 'assistant' } } }) +
  ev('tool-plan-delta', { delta: { message: { tool_plan: 'I will check.' } } }) +
  ev('tool-call-start', {
    index: 0,
    delta: { message: { tool_calls: { id: 'get_weather_nsz5zm3w56q3', type: 'function', function: { name: 'get_weather', arguments: '' } } } },
  }) +
  ev('tool-call-delta', { index: 0, delta: { message: { tool_calls: { function: { arguments: '{"location":' } } } } }) +
  ev('tool-call-delta', { index: 0, delta: { message: { tool_calls: { function: { arguments: '"Zürich"}' } } } } }) +
  ev('tool-call-end', { index: 0 }) +
  ev('message-end', { delta: { finish_reason: 'TOOL_CALL', usage: { billed_units: { input_tokens: 20, output_tokens: 15 } } } }) +
  'data: [DONE]\n\n';

describe('cohere chat stream', () => {
  it('translates content events, split anywhere', () => {
    const out = translateEveryWay(() => chat.stream!(ctx()), textWire, '東');
    expect(contentOf(out.chunks)).toBe('Grüße aus 東京');
    expect(out.chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    expect(out.chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
    expect(out.chunks.every((c) => c.id === '29f14a5a-11de-4cae-9800-25e4747408ea')).toBe(true);
    expect(out.usage).toEqual({ prompt_tokens: 5, completion_tokens: 10, total_tokens: 15 });
    expect(out.chunks.some((c) => c.choices.length === 0)).toBe(false);
  });

  it('translates tool-call events and adds the usage chunk only with include_usage', () => {
    const out = translateEveryWay(() => chat.stream!(ctx({ includeUsage: true })), toolWire, 'ü');
    const calls = out.chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(calls).toEqual([
      { index: 0, id: 'get_weather_nsz5zm3w56q3', type: 'function', function: { name: 'get_weather', arguments: '' } },
      { index: 0, function: { arguments: '{"location":' } },
      { index: 0, function: { arguments: '"Zürich"}' } },
    ]);
    expect(out.chunks.at(-2)!.choices[0]!.finish_reason).toBe('tool_calls');
    expect(out.chunks.at(-1)).toMatchObject({ id: 'tool-msg-1', choices: [], usage: { prompt_tokens: 20, completion_tokens: 15, total_tokens: 35 } });

    // The streamed call goes back to Cohere unchanged on the next turn.
    const args = calls.map((c) => c.function?.arguments ?? '').join('');
    const next = bodyOf({
      model: 'c',
      messages: [
        { role: 'assistant', content: null, tool_calls: [{ id: calls[0]!.id!, type: 'function', function: { name: 'get_weather', arguments: args } }] },
        { role: 'tool', tool_call_id: calls[0]!.id!, content: '21C' },
      ],
    });
    expect(JSON.parse(next.messages[0].tool_calls[0].function.arguments)).toEqual({ location: 'Zürich' });
    expect(next.messages[1].tool_call_id).toBe('get_weather_nsz5zm3w56q3');
  });

  it('reports a non-JSON event', () => {
    expect(translateEveryWay(() => chat.stream!(ctx()), 'event: content-delta\ndata: {oops\n\n').error?.code).toBe('invalid_upstream_chunk');
  });
});

describe('cohere embeddings', () => {
  it('calls /v2/embed with input_type and float types, and maps back to the OpenAI shape', () => {
    const req = cohere.embeddings!.request({ model: 'embed-v4.0', input: ['hello', 'world'], dimensions: 256 }, target);
    expect(req.url).toBe('https://api.cohere.com/v2/embed');
    expect(JSON.parse(req.body as string)).toEqual({
      model: 'embed-v4.0',
      texts: ['hello', 'world'],
      input_type: 'search_document',
      embedding_types: ['float'],
      output_dimension: 256,
    });
    expect(JSON.parse(cohere.embeddings!.request({ model: 'e', input: 'q', input_type: 'search_query' }, target).body as string).input_type).toBe(
      'search_query',
    );

    const upstream = {
      id: 'da6e531f-54c6-4a73-bf92-f60566d8d753',
      response_type: 'embeddings_by_type',
      embeddings: {
        float: [
          [0.016296387, -0.008354187],
          [0.5, 0.25],
        ],
      },
      texts: ['hello', 'world'],
      meta: { api_version: { version: '2' }, billed_units: { input_tokens: 2 } },
    };
    expect(cohere.embeddings!.response!(upstream, ctx({ model: 'embed-v4.0' }))).toEqual({
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: [0.016296387, -0.008354187] },
        { object: 'embedding', index: 1, embedding: [0.5, 0.25] },
      ],
      model: 'embed-v4.0',
      usage: { prompt_tokens: 2, total_tokens: 2 },
    });
    const b64 = cohere.embeddings!.response!(upstream, ctx(), { model: 'e', input: [], encoding_format: 'base64' });
    const bytes = Buffer.from(b64.data[1]!.embedding as string, 'base64');
    expect([bytes.readFloatLE(0), bytes.readFloatLE(4)]).toEqual([0.5, 0.25]);
  });

  it('answers 400 for token-array input', () => {
    expect(() => cohere.embeddings!.request({ model: 'e', input: [1, 2, 3] }, target)).toThrow(GatewayError);
  });
});

describe('cohere rerank', () => {
  it('maps the unified request and response (search units from billed units)', () => {
    const body = {
      model: 'rerank-v3.5',
      query: 'capital of the US?',
      documents: ['Carson City is the capital of Nevada.', { text: 'Washington, D.C. is the capital.', id: 'x' }],
      top_n: 2,
      return_documents: true,
      max_tokens_per_doc: 512,
      rank_fields: ['text'],
    };
    const req = cohere.rerank!.request(body, target);
    expect(JSON.parse(req.body as string)).toEqual({
      model: 'rerank-v3.5',
      query: 'capital of the US?',
      documents: ['Carson City is the capital of Nevada.', 'Washington, D.C. is the capital.'],
      top_n: 2,
      max_tokens_per_doc: 512,
    });
    const upstream = {
      id: '07734bd2-2473-4f07-94e1-0d9f0e6843cf',
      results: [
        { index: 1, relevance_score: 0.9929 },
        { index: 0, relevance_score: 0.0848 },
      ],
      meta: { api_version: { version: '2' }, billed_units: { search_units: 1 } },
    };
    expect(cohere.rerank!.response(upstream, body, ctx())).toEqual({
      object: 'list',
      id: '07734bd2-2473-4f07-94e1-0d9f0e6843cf',
      results: [
        { index: 1, relevance_score: 0.9929, document: { text: 'Washington, D.C. is the capital.' } },
        { index: 0, relevance_score: 0.0848, document: { text: 'Carson City is the capital of Nevada.' } },
      ],
      model: 'rerank-v3.5',
      usage: { search_units: 1 },
      provider: 'cohere',
    });
  });

  it('falls back to one search unit per 100 documents', () => {
    const docs = Array.from({ length: 250 }, (_, i) => `d${i}`);
    const out = cohere.rerank!.response({ results: [{ index: 3, relevance_score: 0.5 }] }, { model: 'r', query: 'q', documents: docs }, ctx());
    expect(out.usage.search_units).toBe(3);
    expect(out.id).toBe('chatcmpl-gw1');
    expect(out.results).toEqual([{ index: 3, relevance_score: 0.5 }]);
  });
});
