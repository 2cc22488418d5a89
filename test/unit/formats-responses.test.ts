import { createOpenAI } from '@ai-sdk/openai';
import { generateObject, generateText, jsonSchema, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import * as zod from 'zod';
import { describe, expect, it } from 'vitest';
import { chatToResponse, newResponseId, type ResponseContext } from '../../functions/formats/responses/response';
import { inputItemsOf, responsesToChat } from '../../functions/formats/responses/request';
import { responsesRequestSchema, type ResponsesRequest } from '../../functions/formats/responses/schema';
import { ResponsesStreamEncoder } from '../../functions/formats/responses/stream';
import type { ResponsesStreamEvent } from '../../functions/formats/responses/types';
import { encodeChunks } from '../../functions/formats/encode';
import { sseFrame } from '../../functions/formats/sse';
import type { ChatCompletionChunk } from '../../functions/providers/types';
import { GatewayError, upstreamError } from '../../functions/shared/errors';
import { parseInput } from '../../functions/shared/validation';
import { callArgs, callStart, chunk, chunkStream, collect, completion, fakeFetch, finish, text, usage, usageChunk } from '../support/chat-chunks';

const parse = (body: unknown) => parseInput(responsesRequestSchema, body);
const translate = (body: unknown) => responsesToChat(parse(body));

function thrown(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected a GatewayError');
}

const ctxFor = (request: ResponsesRequest): ResponseContext => ({ id: newResponseId(), createdAt: 1_700_000_000, request, model: 'gpt-test' });

function encode(request: ResponsesRequest, chunks: ChatCompletionChunk[], failure?: GatewayError): ResponsesStreamEvent[] {
  const enc = new ResponsesStreamEncoder(ctxFor(request));
  const events = chunks.flatMap((c) => enc.push(c));
  return [...events, ...(failure ? enc.fail(failure) : enc.end())];
}
const sseOf = (events: ResponsesStreamEvent[]) => events.map(sseFrame).join('');
const openaiOver = (body: string, type: string) => new OpenAI({ apiKey: 'k', baseURL: 'http://gw.test/v1', fetch: fakeFetch(body, type), maxRetries: 0 });
const aiOver = (body: string, type: string, requests: unknown[] = []) =>
  createOpenAI({ apiKey: 'k', baseURL: 'http://gw.test/v1', fetch: fakeFetch(body, type, requests) })('gpt-test');

describe('Responses request -> chat', () => {
  it('takes a string input with instructions and the sampling fields', () => {
    const chat = translate({
      model: 'm',
      input: 'hi',
      instructions: 'be brief',
      max_output_tokens: 50,
      temperature: 0.2,
      top_p: 0.9,
      user: 'u1',
      metadata: { a: 'b' },
      reasoning: { effort: 'low', summary: 'auto' },
    });
    expect(chat).toEqual({
      model: 'm',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hi' },
      ],
      max_completion_tokens: 50,
      temperature: 0.2,
      top_p: 0.9,
      user: 'u1',
      metadata: { a: 'b' },
      reasoning_effort: 'low',
    });
  });

  it('translates message items, images, function calls and their outputs into one chat history', () => {
    const chat = translate({
      model: 'm',
      input: [
        { role: 'developer', content: 'dev rules' },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'look: ' },
            { type: 'input_image', image_url: 'https://x/y.png', detail: 'high' },
          ],
        },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'checking', annotations: [] }], id: 'msg_1', status: 'completed' },
        { type: 'function_call', call_id: 'call_1', name: 'a', arguments: '{"x":1}', id: 'fc_1' },
        { type: 'function_call', call_id: 'call_2', name: 'b', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'one' },
        { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'two' }] },
        { type: 'reasoning', id: 'rs_1', summary: [] },
        { role: 'user', content: [{ type: 'input_file', file_data: 'data:application/pdf;base64,AA', filename: 'a.pdf' }] },
      ],
    });
    expect(chat.messages).toEqual([
      { role: 'developer', content: 'dev rules' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look: ' },
          { type: 'image_url', image_url: { url: 'https://x/y.png', detail: 'high' } },
        ],
      },
      {
        role: 'assistant',
        content: 'checking',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'a', arguments: '{"x":1}' } },
          { id: 'call_2', type: 'function', function: { name: 'b', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'one' },
      { role: 'tool', tool_call_id: 'call_2', content: 'two' },
      { role: 'user', content: [{ type: 'file', file: { file_data: 'data:application/pdf;base64,AA', filename: 'a.pdf' } }] },
    ]);
  });

  it('starts a new assistant turn for a function call that follows a tool result', () => {
    const chat = translate({
      input: [
        { type: 'function_call', call_id: 'c1', name: 'a', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'r' },
        { type: 'function_call', call_id: 'c2', name: 'a', arguments: '{}' },
      ],
    });
    expect(chat.messages.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant']);
    expect(chat.messages[0]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'a', arguments: '{}' } }],
    });
  });

  it('prepends the stored conversation of previous_response_id before the new input', () => {
    const body = parse({ input: 'and then?', instructions: 'now', previous_response_id: 'resp_1' });
    const previous = [...inputItemsOf({ input: 'first' }), { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'one' }] }];
    expect(responsesToChat(body, previous).messages).toEqual([
      { role: 'system', content: 'now' },
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'one' },
      { role: 'user', content: 'and then?' },
    ]);
  });

  it('continues from a stored response: its input and output items become the history', () => {
    const first = parse({ input: 'Weather in Oslo?', tools: [{ type: 'function', name: 'weather' }] });
    const answered = chatToResponse(
      completion(
        {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }],
        },
        'tool_calls',
      ),
      ctxFor(first),
    );
    const stored = [...inputItemsOf(first), ...answered.output];
    const next = parse({ previous_response_id: answered.id, input: [{ type: 'function_call_output', call_id: 'call_1', output: 'sunny' }] });
    expect(responsesToChat(next, stored).messages).toEqual([
      { role: 'user', content: 'Weather in Oslo?' },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    ]);
  });

  it('translates function tools, tool_choice, parallel_tool_calls and streaming', () => {
    const chat = translate({
      input: 'x',
      stream: true,
      tools: [
        { type: 'function', name: 'get', description: 'd', parameters: { type: 'object', properties: {} }, strict: true },
        { type: 'function', name: 'put' },
      ],
      tool_choice: { type: 'function', name: 'get' },
      parallel_tool_calls: false,
    });
    expect(chat.tools).toEqual([
      { type: 'function', function: { name: 'get', description: 'd', parameters: { type: 'object', properties: {} }, strict: true } },
      { type: 'function', function: { name: 'put' } },
    ]);
    expect(chat.tool_choice).toEqual({ type: 'function', function: { name: 'get' } });
    expect(chat.parallel_tool_calls).toBe(false);
    expect(chat.stream).toBe(true);
    expect(chat.stream_options).toEqual({ include_usage: true });
    expect(translate({ input: 'x', tools: [{ type: 'function', name: 'get' }], tool_choice: 'required' }).tool_choice).toBe('required');
    expect(translate({ input: 'x', tool_choice: 'auto' }).tool_choice).toBeUndefined();
  });

  it('narrows tools to an allowed_tools choice', () => {
    const chat = translate({
      input: 'x',
      tools: [
        { type: 'function', name: 'a' },
        { type: 'function', name: 'b' },
      ],
      tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'b' }] },
    });
    expect(chat.tools?.map((t) => t.function.name)).toEqual(['b']);
    expect(chat.tool_choice).toBe('required');
  });

  it('maps text.format to response_format', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] };
    expect(translate({ input: 'x', text: { format: { type: 'json_schema', name: 'out', schema, strict: true } } }).response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'out', schema, strict: true },
    });
    expect(translate({ input: 'x', text: { format: { type: 'json_object' } } }).response_format).toEqual({ type: 'json_object' });
    expect(translate({ input: 'x', text: { format: { type: 'text' } } }).response_format).toBeUndefined();
    expect(thrown(() => translate({ input: 'x', text: { format: { type: 'json_schema', schema } } })).param).toBe('text.format.name');
  });

  it.each(['web_search', 'web_search_preview', 'file_search', 'code_interpreter', 'computer_use_preview', 'mcp', 'image_generation', 'local_shell'])(
    'refuses the built-in tool %s naming it',
    (type) => {
      const err = thrown(() => translate({ input: 'x', tools: [{ type: 'function', name: 'f' }, { type }] }));
      expect(err.status).toBe(400);
      expect(err.param).toBe('tools[1].type');
      expect(err.message).toContain(type);
    },
  );

  it('refuses what it cannot translate with a 400 naming the field', () => {
    expect(thrown(() => translate({ input: [{ type: 'item_reference', id: 'msg_1' }] })).param).toBe('input[0].type');
    expect(thrown(() => translate({ input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] })).param).toBe(
      'input[0].content[0].image_url',
    );
    expect(thrown(() => translate({ input: [{ type: 'function_call', name: 'a', arguments: '{}' }] })).param).toBe('input[0].call_id');
    expect(thrown(() => translate({ input: [{ role: 'user', content: [{ type: 'input_audio' }] }] })).param).toBe('input[0].content');
    expect(thrown(() => translate({ input: 'x', tool_choice: { type: 'file_search' } })).param).toBe('tool_choice.type');
    expect(thrown(() => translate({ model: 'm' })).param).toBe('input');
    expect(thrown(() => parse({ input: 'x', max_output_tokens: 0 })).param).toBe('max_output_tokens');
    expect(thrown(() => parse({ input: 'x', text: { format: { type: 'yaml' } } })).param).toBe('text.format.type');
  });
});

describe('Responses requests as the AI SDK sends them', () => {
  const answer = (content: string) => JSON.stringify(chatToResponse(completion({ role: 'assistant', content }, 'stop'), ctxFor(parse({ input: 'x' }))));

  it('translates a tool round trip with a system prompt', async () => {
    const requests: unknown[] = [];
    await generateText({
      model: aiOver(answer('It is sunny.'), 'application/json', requests),
      system: 'You are terse.',
      tools: {
        weather: tool({
          description: 'Weather',
          inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
        }),
      },
      toolChoice: 'auto',
      maxOutputTokens: 64,
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Checking.' },
            { type: 'tool-call', toolCallId: 'call_1', toolName: 'weather', input: { city: 'Oslo' } },
          ],
        },
        { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call_1', toolName: 'weather', output: { type: 'json', value: { sky: 'sunny' } } }] },
      ],
    });
    const chat = translate(requests[0]);
    expect(chat.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(chat.messages[0]).toEqual({ role: 'system', content: 'You are terse.' });
    expect(chat.messages[2]).toMatchObject({
      role: 'assistant',
      content: 'Checking.',
      tool_calls: [{ id: 'call_1', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }],
    });
    expect(chat.messages[3]).toEqual({ role: 'tool', tool_call_id: 'call_1', content: '{"sky":"sunny"}' });
    expect(chat.tools).toMatchObject([{ type: 'function', function: { name: 'weather', description: 'Weather' } }]);
    expect(chat.tool_choice).toBe('auto');
    expect(chat.max_completion_tokens).toBe(64);
  });

  it('translates generateObject into a json_schema response_format and parses the answer', async () => {
    const requests: unknown[] = [];
    const result = await generateObject({
      model: aiOver(answer('{"name":"Oslo"}'), 'application/json', requests),
      schema: jsonSchema<{ name: string }>({ type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false }),
      prompt: 'A city',
    });
    expect(result.object).toEqual({ name: 'Oslo' });
    expect(translate(requests[0]).response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { schema: { properties: { name: { type: 'string' } } } },
    });
  });
});

describe('chat completion -> Responses object', () => {
  const request = parse({ model: 'm', input: 'x', instructions: 'be brief', temperature: 0.5, tools: [{ type: 'function', name: 'get' }] });

  it('builds message and function_call items, usage and the echoed request', () => {
    const r = chatToResponse(
      completion(
        { role: 'assistant', content: 'Sure.', tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'get', arguments: '{"q":1}' } }] },
        'tool_calls',
        usage(10, 5, 4),
      ),
      ctxFor(request),
    );
    expect(r).toMatchObject({
      object: 'response',
      status: 'completed',
      incomplete_details: null,
      error: null,
      model: 'gpt-test',
      instructions: 'be brief',
      temperature: 0.5,
      top_p: 1,
      tool_choice: 'auto',
      tools: [{ type: 'function', name: 'get' }],
      parallel_tool_calls: true,
      usage: {
        input_tokens: 10,
        output_tokens: 5,
        total_tokens: 15,
        input_tokens_details: { cached_tokens: 4 },
        output_tokens_details: { reasoning_tokens: 0 },
      },
    });
    expect(r.id).toMatch(/^resp_/);
    expect(r.output).toHaveLength(2);
    expect(r.output[0]).toMatchObject({
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: 'Sure.', annotations: [] }],
    });
    expect(r.output[0]!.id).toMatch(/^msg_/);
    expect(r.output[1]).toMatchObject({ type: 'function_call', status: 'completed', call_id: 'call_9', name: 'get', arguments: '{"q":1}' });
    expect(r.output[1]!.id).toMatch(/^fc_/);
  });

  it('is incomplete when cut by max tokens or a content filter', () => {
    const cut = chatToResponse(completion({ role: 'assistant', content: 'Once upon' }, 'length'), ctxFor(request));
    expect(cut).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [{ status: 'incomplete' }], usage: null });
    expect(chatToResponse(completion({ role: 'assistant', content: '' }, 'content_filter'), ctxFor(request))).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'content_filter' },
      output: [],
    });
  });

  it('satisfies the openai SDK (output_text) and the AI SDK generateText', async () => {
    const r = chatToResponse(completion({ role: 'assistant', content: 'Hello there' }, 'stop', usage(3, 2)), ctxFor(request));
    const sdk = await openaiOver(JSON.stringify(r), 'application/json').responses.create({ model: 'm', input: 'x' });
    expect(sdk.output_text).toBe('Hello there');

    const result = await generateText({ model: aiOver(JSON.stringify(r), 'application/json'), prompt: 'x' });
    expect(result.text).toBe('Hello there');
    expect(result.finishReason).toBe('stop');
    expect(result.usage.inputTokens).toBe(3);
    expect(result.usage.outputTokens).toBe(2);

    const call = chatToResponse(
      completion(
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get', arguments: '{"q":"a"}' } }] },
        'tool_calls',
      ),
      ctxFor(request),
    );
    const withTool = await generateText({
      model: aiOver(JSON.stringify(call), 'application/json'),
      prompt: 'x',
      tools: { get: tool({ inputSchema: jsonSchema<{ q: string }>({ type: 'object', properties: { q: { type: 'string' } } }) }) },
    });
    expect(withTool.toolCalls).toMatchObject([{ toolCallId: 'call_1', toolName: 'get', input: { q: 'a' } }]);
    expect(withTool.finishReason).toBe('tool-calls');
  });
});

describe('Responses stream encoder', () => {
  const request = parse({ model: 'm', input: 'x', stream: true });

  it('emits the documented event order with increasing sequence numbers', () => {
    const events = encode(request, [chunk({ role: 'assistant', content: '' }), text('Hel'), text('lo'), finish('stop'), usageChunk(usage(4, 2))]);
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events[0]).toMatchObject({ response: { status: 'in_progress', output: [] } });
    expect(events.at(-1)).toMatchObject({ response: { status: 'completed', usage: { input_tokens: 4, output_tokens: 2, total_tokens: 6 } } });
  });

  it('is accumulated by the openai SDK responses.stream() into the final response', async () => {
    const events = encode(request, [text('Hello'), text(' world'), finish('stop'), usageChunk(usage(4, 2))]);
    const stream = openaiOver(sseOf(events), 'text/event-stream').responses.stream({ model: 'm', input: 'x' });
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    const final = await stream.finalResponse();
    expect(deltas).toEqual(['Hello', ' world']);
    expect(final.status).toBe('completed');
    expect(final.output).toMatchObject([{ type: 'message', status: 'completed', content: [{ type: 'output_text', text: 'Hello world' }] }]);
    expect(final.usage?.total_tokens).toBe(6);
  });

  it('gives responses.stream() with a zodTextFormat its parsed output', async () => {
    const format = zodTextFormat(zod.object({ name: zod.string() }), 'city');
    const events = encode(parse({ input: 'x', text: { format } }), [text('{"name":'), text('"Oslo"}'), finish('stop')]);
    const final = await openaiOver(sseOf(events), 'text/event-stream').responses.stream({ model: 'm', input: 'x', text: { format } }).finalResponse();
    expect(final.output_parsed).toEqual({ name: 'Oslo' });
    expect(final.output_text).toBe('{"name":"Oslo"}');
  });

  it('streams text then several interleaved function calls that the SDKs both rebuild', async () => {
    const events = encode(request, [
      text('Let me check.'),
      callStart(0, 'call_a', 'get', '{"city":'),
      callStart(1, 'call_b', 'put', '{"k"'),
      callArgs(0, '"Paris"}'),
      callArgs(1, ':2}'),
      finish('tool_calls'),
      usageChunk(usage(5, 7)),
    ]);
    const types = events.map((e) => e.type);
    expect(types.filter((t) => t === 'response.output_item.added')).toHaveLength(3);
    // The message is done before the first call is announced.
    expect(types.indexOf('response.output_item.done')).toBeLessThan(types.lastIndexOf('response.output_item.added'));

    const final = await openaiOver(sseOf(events), 'text/event-stream').responses.stream({ model: 'm', input: 'x' }).finalResponse();
    expect(final.output[0]).toMatchObject({ type: 'message', content: [{ text: 'Let me check.' }] });
    expect(final.output.filter((o) => o.type === 'function_call')).toMatchObject([
      { call_id: 'call_a', name: 'get', arguments: '{"city":"Paris"}', status: 'completed' },
      { call_id: 'call_b', name: 'put', arguments: '{"k":2}', status: 'completed' },
    ]);

    const result = streamText({
      model: aiOver(sseOf(events), 'text/event-stream'),
      prompt: 'x',
      tools: {
        get: tool({ inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } } }) }),
        put: tool({ inputSchema: jsonSchema<{ k: number }>({ type: 'object', properties: { k: { type: 'number' } } }) }),
      },
    });
    expect(await result.text).toBe('Let me check.');
    expect(await result.toolCalls).toMatchObject([
      { toolCallId: 'call_a', toolName: 'get', input: { city: 'Paris' } },
      { toolCallId: 'call_b', toolName: 'put', input: { k: 2 } },
    ]);
    expect(await result.finishReason).toBe('tool-calls');
    expect((await result.usage).inputTokens).toBe(5);
  });

  it('announces a call only once its name is known', () => {
    const events = encode(request, [
      chunk({ tool_calls: [{ index: 0, id: 'call_x', function: { arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { name: 'late', arguments: '{}' } }] }),
      finish('tool_calls'),
    ]);
    const added = events.find((e) => e.type === 'response.output_item.added');
    expect(added).toMatchObject({ item: { type: 'function_call', call_id: 'call_x', name: 'late', arguments: '' } });
    expect(events.find((e) => e.type === 'response.function_call_arguments.done')).toMatchObject({ name: 'late', arguments: '{}' });
  });

  it('ends incomplete when the answer is cut by max tokens', async () => {
    const events = encode(request, [text('Once upon'), finish('length')]);
    expect(events.at(-1)).toMatchObject({
      type: 'response.incomplete',
      response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } },
    });
    const result = streamText({ model: aiOver(sseOf(events), 'text/event-stream'), prompt: 'x' });
    expect(await result.text).toBe('Once upon');
    expect(await result.finishReason).toBe('length');
  });

  it('reports a failure mid-stream as error + response.failed, which both SDKs raise', async () => {
    const events = encode(request, [text('partial')], upstreamError('The provider closed the connection.', 'upstream_stream_error'));
    const types = events.map((e) => e.type);
    expect(types.slice(-2)).toEqual(['error', 'response.failed']);
    expect(types).not.toContain('response.completed');
    expect(events.at(-1)).toMatchObject({
      response: { status: 'failed', error: { code: 'upstream_stream_error', message: 'The provider closed the connection.' } },
    });

    const stream = openaiOver(sseOf(events), 'text/event-stream').responses.stream({ model: 'm', input: 'x' });
    await expect(stream.finalResponse()).rejects.toThrow('The provider closed the connection.');

    const parts: string[] = [];
    const result = streamText({
      model: aiOver(sseOf(events), 'text/event-stream'),
      prompt: 'x',
      onError: () => {
        parts.push('error');
      },
    });
    await result.consumeStream();
    expect(parts).toEqual(['error']);
    expect(await result.finishReason).toBe('error');
  });

  it('ignores chunks after the end and sends nothing twice', () => {
    const enc = new ResponsesStreamEncoder(ctxFor(request));
    enc.push(text('a'));
    expect(enc.end().at(-1)!.type).toBe('response.completed');
    expect(enc.push(text('b'))).toEqual([]);
    expect(enc.end()).toEqual([]);
    expect(enc.fail(upstreamError('x'))).toEqual([]);
    expect(enc.response?.status).toBe('completed');
  });
});

describe('encodeChunks over a chunk stream', () => {
  const request = parse({ model: 'm', input: 'x', stream: true });

  it('yields the whole Responses stream and keeps the final response', async () => {
    const enc = new ResponsesStreamEncoder(ctxFor(request));
    const sse = await collect(encodeChunks(enc, chunkStream([text('Hi'), finish('stop')])));
    const final = await openaiOver(sse, 'text/event-stream').responses.stream({ model: 'm', input: 'x' }).finalResponse();
    expect(final.output).toMatchObject([{ content: [{ text: 'Hi' }] }]);
    expect(enc.response).toMatchObject({ status: 'completed', output: [{ content: [{ text: 'Hi' }] }] });
  });

  it('turns a thrown gateway error into error + response.failed', async () => {
    const enc = new ResponsesStreamEncoder(ctxFor(request));
    const sse = await collect(encodeChunks(enc, chunkStream([text('Hi')], upstreamError('Provider stream broke.'))));
    await expect(openaiOver(sse, 'text/event-stream').responses.stream({ model: 'm', input: 'x' }).finalResponse()).rejects.toThrow('Provider stream broke.');
    expect(enc.response?.status).toBe('failed');
  });
});
