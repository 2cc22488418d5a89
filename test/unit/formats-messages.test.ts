import Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { anthropicErrorBody, toAnthropicError } from '../../functions/formats/messages/errors';
import { messagesToChat } from '../../functions/formats/messages/request';
import { chatToMessage, newMessageId } from '../../functions/formats/messages/response';
import { messagesRequestSchema } from '../../functions/formats/messages/schema';
import { MessagesStreamEncoder } from '../../functions/formats/messages/stream';
import type { MessagesStreamEvent } from '../../functions/formats/messages/types';
import { encodeChunks } from '../../functions/formats/encode';
import { sseFrame } from '../../functions/formats/sse';
import type { ChatCompletionChunk } from '../../functions/providers/types';
import { badRequest, GatewayError, upstreamError } from '../../functions/shared/errors';
import { parseInput } from '../../functions/shared/validation';
import { callArgs, callStart, chunk, chunkStream, collect, completion, fakeFetch, finish, text, usage, usageChunk } from '../support/chat-chunks';

const base = { model: 'claude-x', max_tokens: 100 };
const parse = (body: unknown) => parseInput(messagesRequestSchema, body);
const translate = (body: Record<string, unknown>) => messagesToChat(parse({ ...base, ...body }));

function thrown(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected a GatewayError');
}

const ctx = () => ({ id: newMessageId(), model: 'claude-x' });
function encode(chunks: ChatCompletionChunk[], failure?: GatewayError): MessagesStreamEvent[] {
  const enc = new MessagesStreamEncoder(ctx());
  return [...chunks.flatMap((c) => enc.push(c)), ...(failure ? enc.fail(failure) : enc.end())];
}
const sseOf = (events: MessagesStreamEvent[]) => events.map(sseFrame).join('');
const client = (body: string, type: string) => new Anthropic({ apiKey: 'k', baseURL: 'http://gw.test', fetch: fakeFetch(body, type), maxRetries: 0 });
const streamOver = (events: MessagesStreamEvent[]) =>
  client(sseOf(events), 'text/event-stream').messages.stream({ ...base, messages: [{ role: 'user', content: 'x' }] });

describe('Messages request -> chat', () => {
  it('translates system, sampling fields, stop sequences and the user id', () => {
    const chat = translate({
      system: [
        { type: 'text', text: 'one' },
        { type: 'text', text: 'two', cache_control: { type: 'ephemeral' } },
      ],
      messages: [{ role: 'user', content: 'hi' }],
      temperature: 0.3,
      top_p: 0.8,
      top_k: 5,
      stop_sequences: ['END'],
      metadata: { user_id: 'u-1' },
      stream: true,
    });
    expect(chat).toEqual({
      model: 'claude-x',
      messages: [
        {
          role: 'system',
          content: [
            { type: 'text', text: 'one' },
            { type: 'text', text: 'two', cache_control: { type: 'ephemeral' } },
          ],
        },
        { role: 'user', content: 'hi' },
      ],
      max_completion_tokens: 100,
      stop: ['END'],
      temperature: 0.3,
      top_p: 0.8,
      top_k: 5,
      user: 'u-1',
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('translates images, tool_use and tool_result blocks into a chat history', () => {
    const chat = translate({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'see' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAA' } },
            { type: 'image', source: { type: 'url', url: 'https://x/y.jpg' } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hmm', signature: 'sig' },
            { type: 'text', text: 'Calling.' },
            { type: 'tool_use', id: 'toolu_1', name: 'get', input: { q: 1 } },
            { type: 'tool_use', id: 'toolu_2', name: 'put', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'r1' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'boom' }], is_error: true },
            { type: 'text', text: 'go on' },
          ],
        },
      ],
    });
    expect(chat.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'see' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAA' } },
          { type: 'image_url', image_url: { url: 'https://x/y.jpg' } },
        ],
      },
      {
        role: 'assistant',
        content: 'Calling.',
        tool_calls: [
          { id: 'toolu_1', type: 'function', function: { name: 'get', arguments: '{"q":1}' } },
          { id: 'toolu_2', type: 'function', function: { name: 'put', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'r1' },
      { role: 'tool', tool_call_id: 'toolu_2', content: 'Error: boom' },
      { role: 'user', content: 'go on' },
    ]);
  });

  it('translates tools and every tool_choice', () => {
    const tools = [{ name: 'get', description: 'd', input_schema: { type: 'object', properties: {} } }];
    const messages = [{ role: 'user', content: 'x' }];
    expect(translate({ messages, tools }).tools).toEqual([
      { type: 'function', function: { name: 'get', description: 'd', parameters: { type: 'object', properties: {} } } },
    ]);
    expect(translate({ messages, tools, tool_choice: { type: 'auto' } }).tool_choice).toBe('auto');
    expect(translate({ messages, tools, tool_choice: { type: 'any', disable_parallel_tool_use: true } })).toMatchObject({
      tool_choice: 'required',
      parallel_tool_calls: false,
    });
    expect(translate({ messages, tools, tool_choice: { type: 'tool', name: 'get' } }).tool_choice).toEqual({ type: 'function', function: { name: 'get' } });
    expect(translate({ messages, tools, tool_choice: { type: 'none' } }).tool_choice).toBe('none');
    expect(translate({ messages, tool_choice: { type: 'auto' } }).tool_choice).toBeUndefined();
  });

  it('maps thinking and output_config to reasoning_effort and response_format', () => {
    const messages = [{ role: 'user', content: 'x' }];
    expect(translate({ messages, thinking: { type: 'enabled', budget_tokens: 1024 } }).reasoning_effort).toBe('low');
    expect(translate({ messages, thinking: { type: 'enabled', budget_tokens: 8000 } }).reasoning_effort).toBe('medium');
    expect(translate({ messages, thinking: { type: 'enabled', budget_tokens: 32000 } }).reasoning_effort).toBe('high');
    expect(translate({ messages, thinking: { type: 'disabled' } }).reasoning_effort).toBeUndefined();
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    expect(translate({ messages, output_config: { effort: 'high', format: { type: 'json_schema', schema } } })).toMatchObject({
      reasoning_effort: 'high',
      response_format: { type: 'json_schema', json_schema: { name: 'output', schema } },
    });
  });

  it('refuses what it cannot translate with a 400 naming the field', () => {
    const messages = [{ role: 'user', content: 'x' }];
    const server = thrown(() => translate({ messages, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }));
    expect(server.param).toBe('tools[0].type');
    expect(server.message).toContain('web_search_20250305');
    expect(thrown(() => translate({ messages: [{ role: 'user', content: [{ type: 'search_result' }] }] })).param).toBe('messages[0].content[0].type');
    expect(thrown(() => translate({ messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] }] })).param).toBe(
      'messages[0].content[0].source.type',
    );
    expect(thrown(() => translate({ messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'url', url: 'https://x' } }] }] })).param).toBe(
      'messages[0].content[0].source',
    );
    expect(thrown(() => translate({ messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'n' }] }] })).param).toBe(
      'messages[0].content[0].input',
    );
    expect(thrown(() => parse({ model: 'm', messages })).param).toBe('max_tokens');
    expect(thrown(() => parse({ ...base, messages: [{ role: 'system', content: 'x' }] })).param).toBe('messages[0].role');
  });
});

describe('chat completion -> Anthropic message', () => {
  it('builds text and tool_use blocks, the stop reason and usage', () => {
    const m = chatToMessage(
      completion(
        { role: 'assistant', content: 'On it.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get', arguments: '{"q":"a"}' } }] },
        'tool_calls',
        usage(10, 4, 3),
      ),
      ctx(),
    );
    expect(m).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-x',
      content: [
        { type: 'text', text: 'On it.' },
        { type: 'tool_use', id: 'call_1', name: 'get', input: { q: 'a' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 7, output_tokens: 4, cache_creation_input_tokens: 0, cache_read_input_tokens: 3 },
    });
    expect(m.id).toMatch(/^msg_/);
  });

  it.each([
    ['stop', 'end_turn'],
    ['length', 'max_tokens'],
    ['content_filter', 'refusal'],
  ] as const)('maps finish reason %s to %s', (reason, stop) => {
    expect(chatToMessage(completion({ role: 'assistant', content: 'x' }, reason), ctx()).stop_reason).toBe(stop);
  });

  it('is read by the Anthropic SDK', async () => {
    const m = chatToMessage(completion({ role: 'assistant', content: 'Hello' }, 'stop', usage(2, 1)), ctx());
    const got = await client(JSON.stringify(m), 'application/json').messages.create({ ...base, messages: [{ role: 'user', content: 'x' }] });
    expect(got.content).toEqual([{ type: 'text', text: 'Hello' }]);
    expect(got.usage.output_tokens).toBe(1);
  });
});

describe('Messages stream encoder', () => {
  it('emits the documented event order for text', () => {
    const events = encode([chunk({ role: 'assistant', content: '' }), text('Hel'), text('lo'), finish('stop'), usageChunk(usage(4, 2))]);
    expect(events.map((e) => e.type)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events.at(-2)).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 2, input_tokens: 4, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    });
  });

  it('is accumulated by the Anthropic SDK messages.stream() into the final message', async () => {
    const stream = streamOver(encode([text('Hello'), text(' world'), finish('stop'), usageChunk(usage(4, 2))]));
    const deltas: string[] = [];
    stream.on('text', (d) => deltas.push(d));
    const final = await stream.finalMessage();
    expect(deltas).toEqual(['Hello', ' world']);
    expect(final.content).toEqual([{ type: 'text', text: 'Hello world' }]);
    expect(final.stop_reason).toBe('end_turn');
    expect(final.usage).toMatchObject({ input_tokens: 4, output_tokens: 2 });
  });

  it('streams text then sequential tool calls live, one block at a time', async () => {
    const events = encode([
      text('Let me check.'),
      callStart(0, 'call_a', 'get', ''),
      callArgs(0, '{"city":'),
      callArgs(0, '"Paris"}'),
      callStart(1, 'call_b', 'put', '{"k":2}'),
      finish('tool_calls'),
      usageChunk(usage(5, 7)),
    ]);
    const starts = events.filter((e) => e.type === 'content_block_start').map((e) => e.index);
    expect(starts).toEqual([0, 1, 2]);
    // The first call's fragments are sent as they come, before the second call starts.
    const firstCallDeltas = events.filter((e) => e.type === 'content_block_delta' && e.index === 1);
    expect(firstCallDeltas.map((e) => (e.delta as { partial_json: string }).partial_json)).toEqual(['{"city":', '"Paris"}']);
    assertNoOverlap(events);

    const final = await streamOver(events).finalMessage();
    expect(final.content).toMatchObject([
      { type: 'text', text: 'Let me check.' },
      { type: 'tool_use', id: 'call_a', name: 'get', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'call_b', name: 'put', input: { k: 2 } },
    ]);
    expect(final.stop_reason).toBe('tool_use');
  });

  it('keeps interleaved tool-call fragments apart', async () => {
    const events = encode([
      callStart(0, 'call_a', 'get', '{"a":'),
      callStart(1, 'call_b', 'put', '{"b":'),
      callArgs(1, '2}'),
      text('and text'),
      callArgs(0, '1}'),
      finish('tool_calls'),
    ]);
    assertNoOverlap(events);
    const final = await streamOver(events).finalMessage();
    expect(final.content).toMatchObject([
      { type: 'tool_use', id: 'call_a', input: { a: 1 } },
      { type: 'tool_use', id: 'call_b', input: { b: 2 } },
      { type: 'text', text: 'and text' },
    ]);
  });

  it('reports max tokens', async () => {
    const final = await streamOver(encode([text('Once upon'), finish('length')])).finalMessage();
    expect(final.stop_reason).toBe('max_tokens');
  });

  it('ends a failed stream with an error event that the SDK raises, never message_stop', async () => {
    const events = encode([text('partial')], upstreamError('The provider closed the connection.'));
    expect(events.at(-1)).toEqual({ type: 'error', error: { type: 'api_error', message: 'The provider closed the connection.' } });
    expect(events.map((e) => e.type)).not.toContain('message_stop');
    await expect(streamOver(events).finalMessage()).rejects.toThrow('The provider closed the connection.');
  });
});

describe('encodeChunks over a chunk stream', () => {
  const stream = (sse: string) => client(sse, 'text/event-stream').messages.stream({ ...base, messages: [{ role: 'user', content: 'x' }] });

  it('yields the whole Messages stream and keeps the final message', async () => {
    const enc = new MessagesStreamEncoder(ctx());
    const sse = await collect(encodeChunks(enc, chunkStream([text('Hi'), finish('stop')])));
    expect((await stream(sse).finalMessage()).content).toEqual([{ type: 'text', text: 'Hi' }]);
    expect(enc.message?.stop_reason).toBe('end_turn');
  });

  it('turns a thrown gateway error into an error event, and hides other errors', async () => {
    const sse = await collect(encodeChunks(new MessagesStreamEncoder(ctx()), chunkStream([text('Hi')], upstreamError('Provider stream broke.'))));
    await expect(stream(sse).finalMessage()).rejects.toThrow('Provider stream broke.');
    const hidden = await collect(encodeChunks(new MessagesStreamEncoder(ctx()), chunkStream([], new Error('secret internals'))));
    expect(hidden).not.toContain('secret');
    expect(hidden).toContain('event: error');
  });
});

describe('Anthropic error shape', () => {
  it('maps gateway errors by status', () => {
    expect(toAnthropicError(badRequest('bad', 'x'))).toEqual({
      status: 400,
      body: { type: 'error', error: { type: 'invalid_request_error', message: 'bad' } },
      headers: {},
    });
    expect(anthropicErrorBody(new GatewayError(429, 'rate_limit_error', 'slow down')).error.type).toBe('rate_limit_error');
    expect(anthropicErrorBody(new GatewayError(401, 'authentication_error', 'who')).error.type).toBe('authentication_error');
    expect(anthropicErrorBody(new GatewayError(404, 'not_found_error', 'gone')).error.type).toBe('not_found_error');
    expect(anthropicErrorBody(new GatewayError(408, 'timeout_error', 'late')).error.type).toBe('timeout_error');
    expect(anthropicErrorBody(new GatewayError(502, 'upstream_error', 'down')).error.type).toBe('api_error');
  });
});

/** Each block is stopped before the next starts, and indexes count up from 0. */
function assertNoOverlap(events: MessagesStreamEvent[]) {
  let open: number | undefined;
  let next = 0;
  for (const e of events) {
    if (e.type === 'content_block_start') {
      expect(open).toBeUndefined();
      expect(e.index).toBe(next++);
      open = e.index as number;
    } else if (e.type === 'content_block_delta') expect(e.index).toBe(open);
    else if (e.type === 'content_block_stop') {
      expect(e.index).toBe(open);
      open = undefined;
    }
  }
  expect(open).toBeUndefined();
}
