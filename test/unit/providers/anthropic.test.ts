import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../functions/shared/errors';
import { anthropic } from '../../../functions/providers/anthropic';
import type { ChatRequest, ProviderTarget } from '../../../functions/providers/types';
import { contentOf, ctx, translateEveryWay } from './stream-helpers';

const target: ProviderTarget = { provider: 'anthropic', apiKey: 'sk-ant-test' };
const chat = anthropic.chat!;
const bodyOf = (req: ChatRequest, t = target) => JSON.parse(chat.request(req, t).body as string);

describe('anthropic request', () => {
  it('posts to /v1/messages with x-api-key and anthropic-version, max_tokens defaulted', () => {
    const req = chat.request({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'Hello' }] }, target);
    expect(req).toEqual({
      url: 'https://api.anthropic.com/v1/messages',
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 4096, messages: [{ role: 'user', content: 'Hello' }] }),
    });
  });

  it('translates a full tool conversation with images and parameters', () => {
    const body = bodyOf({
      model: 'claude-sonnet-4-5',
      stream: true,
      stream_options: { include_usage: true },
      max_completion_tokens: 512,
      temperature: 0.2,
      top_p: 0.9,
      stop: 'END',
      user: 'user-42',
      seed: 1,
      parallel_tool_calls: false,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Current weather',
            parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
            strict: true,
          },
        },
      ],
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'developer', content: [{ type: 'text', text: 'Use metric units.' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these, and the weather in Boston and Paris?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg', detail: 'high' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Boston, MA"}' } },
            { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '12C' },
        { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '18C' }] },
        { role: 'user', content: 'Thanks' },
      ],
    });
    expect(body).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 512,
      system: [
        { type: 'text', text: 'You are terse.' },
        { type: 'text', text: 'Use metric units.' },
      ],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these, and the weather in Boston and Paris?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { location: 'Boston, MA' } },
            { type: 'tool_use', id: 'call_2', name: 'get_weather', input: { location: 'Paris' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_1', content: '12C' },
            { type: 'tool_result', tool_use_id: 'call_2', content: [{ type: 'text', text: '18C' }] },
          ],
        },
        { role: 'user', content: 'Thanks' },
      ],
      tools: [
        {
          name: 'get_weather',
          description: 'Current weather',
          input_schema: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
        },
      ],
      tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true },
      stop_sequences: ['END'],
      temperature: 0.2,
      top_p: 0.9,
      metadata: { user_id: 'user-42' },
      stream: true,
    });
  });

  it('maps each tool_choice and a PDF data URL', () => {
    const tools: ChatRequest['tools'] = [{ type: 'function', function: { name: 'f' } }];
    const msgs: ChatRequest['messages'] = [{ role: 'user', content: 'x' }];
    expect(bodyOf({ model: 'm', messages: msgs, tools, tool_choice: 'auto' }).tool_choice).toEqual({ type: 'auto' });
    expect(bodyOf({ model: 'm', messages: msgs, tools, tool_choice: 'required' }).tool_choice).toEqual({ type: 'any' });
    expect(bodyOf({ model: 'm', messages: msgs, tools, tool_choice: 'none' }).tool_choice).toEqual({ type: 'none' });
    expect(bodyOf({ model: 'm', messages: msgs, tools, parallel_tool_calls: false }).tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
    expect(bodyOf({ model: 'm', messages: msgs, tools }).tools).toEqual([{ name: 'f', input_schema: { type: 'object', properties: {} } }]);
    const pdf = bodyOf({
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:application/pdf;base64,JVBERi0=' } }] }],
    });
    expect(pdf.messages[0].content[0]).toEqual({ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } });
  });

  it('holds the model to response_format with a forced answer tool, not a system instruction', () => {
    const schema = { type: 'object', properties: { a: { type: 'number' } } };
    const body = bodyOf({
      model: 'm',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_schema', json_schema: { name: 'w', schema } },
    });
    expect(body.max_tokens).toBe(100);
    expect(body.system).toBeUndefined();
    expect(body.tools).toEqual([{ name: 'json_answer', description: expect.stringContaining('(w)'), input_schema: schema }]);
    expect(body.tool_choice).toEqual({ type: 'tool', name: 'json_answer' });
    const object = bodyOf({ model: 'm', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_object' } });
    expect(object.tools).toEqual([expect.objectContaining({ name: 'json_answer', input_schema: { type: 'object' } })]);
    const array = bodyOf({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_schema', json_schema: { name: 'l', schema: { type: 'array' } } },
    });
    expect(array.tools).toEqual([expect.objectContaining({ name: 'json_answer_value', input_schema: expect.objectContaining({ required: ['value'] }) })]);
  });

  it('answers 400 for missing key, bad tool arguments, n > 1 and unsupported parts', () => {
    const status = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        return e instanceof GatewayError ? e.status : 'other';
      }
      return 'none';
    };
    const m: ChatRequest = { model: 'm', messages: [{ role: 'user', content: 'x' }] };
    expect(status(() => chat.request(m, { provider: 'anthropic' }))).toBe(400);
    expect(status(() => chat.request({ ...m, n: 2 }, target))).toBe(400);
    expect(
      status(() =>
        chat.request(
          { model: 'm', messages: [{ role: 'assistant', tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{oops' } }] }] },
          target,
        ),
      ),
    ).toBe(400);
    expect(status(() => chat.request({ model: 'm', messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] }, target))).toBe(400);
  });

  it('honours a custom host and forwarded headers without sending x-gateway-*', () => {
    const req = chat.request(
      { model: 'm', messages: [{ role: 'user', content: 'x' }] },
      {
        ...target,
        customHost: 'https://claude-proxy.example/v1/',
        forwardHeaders: { 'anthropic-beta': 'prompt-caching-2024-07-31', 'x-gateway-trace-id': 't' },
      },
    );
    expect(req.url).toBe('https://claude-proxy.example/v1/messages');
    expect(req.headers['anthropic-beta']).toBe('prompt-caching-2024-07-31');
    expect(Object.keys(req.headers).some((h) => h.startsWith('x-gateway-'))).toBe(false);
  });
});

describe('anthropic response', () => {
  it('concatenates text, maps tool_use, finish reason and usage with cache tokens', () => {
    const out = chat.response(
      {
        id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5-20250929',
        content: [
          { type: 'text', text: 'Let me check ' },
          { type: 'text', text: 'the weather.' },
          { type: 'tool_use', id: 'toolu_01A09q90qw90lq917835lq9', name: 'get_weather', input: { location: 'Boston, MA' } },
        ],
        stop_reason: 'tool_use',
        stop_sequence: null,
        usage: { input_tokens: 20, output_tokens: 30, cache_creation_input_tokens: 5, cache_read_input_tokens: 100 },
      },
      ctx(),
    );
    expect(out).toEqual({
      id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
      object: 'chat.completion',
      created: 1700000000,
      model: 'caller-model',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Let me check the weather.',
            refusal: null,
            tool_calls: [{ id: 'toolu_01A09q90qw90lq917835lq9', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Boston, MA"}' } }],
          },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 125, completion_tokens: 30, total_tokens: 155, prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 5 } },
    });
  });

  it.each([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['pause_turn', 'stop'],
    ['max_tokens', 'length'],
    ['refusal', 'content_filter'],
    ['model_context_window_exceeded', 'length'],
  ])('stop_reason %s -> %s; tool-only answers have null content', (reason, finish) => {
    const out = chat.response({ id: 'msg_1', content: [], stop_reason: reason, usage: { input_tokens: 1, output_tokens: 1 } }, ctx());
    expect(out.choices[0]!.finish_reason).toBe(finish);
    expect(out.choices[0]!.message.content).toBe('');
    const tool = chat.response({ id: 'msg_1', content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }], stop_reason: 'tool_use' }, ctx());
    expect(tool.choices[0]!.message.content).toBeNull();
  });
});

const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const wire =
  ev('message_start', {
    message: {
      id: 'msg_01Stream',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 25, output_tokens: 1 },
    },
  }) +
  ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
  ev('ping', {}) +
  ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Héllo 🌍' } }) +
  ev('content_block_stop', { index: 0 }) +
  ev('content_block_start', { index: 1, content_block: { type: 'tool_use', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', input: {} } }) +
  ev('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '' } }) +
  ev('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: '{"loc' } }) +
  ev('content_block_delta', { index: 1, delta: { type: 'input_json_delta', partial_json: 'ation": "Zürich"}' } }) +
  ev('content_block_stop', { index: 1 }) +
  ev('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 89 } }) +
  ev('message_stop', {});

describe('anthropic stream', () => {
  it('translates the contract stream, split anywhere, into OpenAI chunks', () => {
    const out = translateEveryWay(() => chat.stream!(ctx()), wire, '🌍');
    expect(out.error).toBeUndefined();
    const deltas = out.chunks.map((c) => [c.choices[0]!.delta, c.choices[0]!.finish_reason]);
    expect(deltas).toEqual([
      [{ role: 'assistant', content: '' }, null],
      [{ content: 'Héllo 🌍' }, null],
      [{ tool_calls: [{ index: 0, id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', type: 'function', function: { name: 'get_weather', arguments: '' } }] }, null],
      [{ tool_calls: [{ index: 0, function: { arguments: '{"loc' } }] }, null],
      [{ tool_calls: [{ index: 0, function: { arguments: 'ation": "Zürich"}' } }] }, null],
      [{}, 'tool_calls'],
    ]);
    expect(out.chunks.every((c) => c.id === 'msg_01Stream' && c.model === 'caller-model' && c.created === 1700000000)).toBe(true);
    expect(out.chunks.every((c) => !('usage' in c))).toBe(true);
    expect(out.usage).toEqual({ prompt_tokens: 25, completion_tokens: 89, total_tokens: 114, prompt_tokens_details: { cached_tokens: 0 } });
  });

  it('round-trips the streamed tool call back into a tool_use block', () => {
    const out = translateEveryWay(() => chat.stream!(ctx()), wire);
    const args = out.chunks
      .flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])
      .map((t) => t.function?.arguments ?? '')
      .join('');
    const body = bodyOf({
      model: 'm',
      messages: [
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', type: 'function', function: { name: 'get_weather', arguments: args } }],
        },
        { role: 'tool', tool_call_id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', content: '21C' },
      ],
    });
    expect(body.messages[1].content).toEqual([{ type: 'tool_use', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', input: { location: 'Zürich' } }]);
    expect(body.messages[2].content).toEqual([{ type: 'tool_result', tool_use_id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', content: '21C' }]);
  });

  it('emits the usage chunk (choices: []) last, only with include_usage, and usage: null elsewhere', () => {
    const out = translateEveryWay(() => chat.stream!(ctx({ includeUsage: true })), wire, '🌍');
    const last = out.chunks.at(-1)!;
    expect(last).toEqual({
      id: 'msg_01Stream',
      object: 'chat.completion.chunk',
      created: 1700000000,
      model: 'caller-model',
      choices: [],
      usage: { prompt_tokens: 25, completion_tokens: 89, total_tokens: 114, prompt_tokens_details: { cached_tokens: 0 } },
    });
    expect(out.chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  it('turns event: error into a StreamError and ignores what follows', () => {
    const text =
      ev('message_start', { message: { id: 'msg_e', usage: { input_tokens: 3, output_tokens: 1 } } }) +
      ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hi' } }) +
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n' +
      ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'never' } });
    const out = translateEveryWay(() => chat.stream!(ctx({ includeUsage: true })), text);
    expect(contentOf(out.chunks)).toBe('Hi');
    expect(out.error).toEqual({ status: 529, message: 'Overloaded', type: 'overloaded_error', code: 'overloaded_error' });
    expect(out.chunks.some((c) => c.choices.length === 0)).toBe(false);
  });

  it('keeps message_start input and cache counts when message_delta sends nulls; tolerates a proxy [DONE]', () => {
    const text =
      ev('message_start', {
        message: { id: 'msg_c', usage: { input_tokens: 10, cache_read_input_tokens: 90, cache_creation_input_tokens: 0, output_tokens: 1 } },
      }) +
      ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'ok' } }) +
      ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { input_tokens: null, cache_read_input_tokens: null, output_tokens: 7 } }) +
      'data: [DONE]\n\n' +
      ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'late' } });
    const out = translateEveryWay(() => chat.stream!(ctx({ includeUsage: true })), text);
    expect(contentOf(out.chunks)).toBe('ok');
    expect(out.error).toBeUndefined();
    expect(out.chunks.at(-1)!.usage).toEqual({ prompt_tokens: 100, completion_tokens: 7, total_tokens: 107, prompt_tokens_details: { cached_tokens: 90 } });
  });

  it('counts tool calls from 0 even when text blocks come first and in between', () => {
    const text =
      ev('message_start', { message: { id: 'msg_2', usage: { input_tokens: 1, output_tokens: 1 } } }) +
      ev('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_a', name: 'a', input: {} } }) +
      ev('content_block_start', { index: 1, content_block: { type: 'text', text: '' } }) +
      ev('content_block_start', { index: 2, content_block: { type: 'tool_use', id: 'toolu_b', name: 'b', input: {} } }) +
      ev('content_block_delta', { index: 2, delta: { type: 'input_json_delta', partial_json: '{}' } }) +
      ev('message_delta', { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 9 } }) +
      ev('message_stop', {});
    const calls = translateEveryWay(() => chat.stream!(ctx()), text).chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(calls.map((c) => [c.index, c.id])).toEqual([
      [0, 'toolu_a'],
      [1, 'toolu_b'],
      [1, undefined],
    ]);
  });
});
