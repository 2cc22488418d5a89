import { describe, expect, it } from 'vitest';
import { fromGeminiSchema } from '../../functions/formats/gemini/json-schema';
import { geminiToChat } from '../../functions/formats/gemini/request';
import { GeminiStreamEncoder } from '../../functions/formats/gemini/stream';
import type { GenerateContentRequest } from '../../functions/formats/gemini/schema';
import type { ChatCompletionChunk } from '../../functions/providers/types';

const chunk = (
  delta: ChatCompletionChunk['choices'][number]['delta'],
  finish: ChatCompletionChunk['choices'][number]['finish_reason'] = null,
  usage?: ChatCompletionChunk['usage'],
): ChatCompletionChunk => ({
  id: 'c',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'm',
  choices: usage ? [] : [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  ...(usage ? { usage } : {}),
});

describe('Gemini schema -> JSON Schema', () => {
  it('lower-cases types, turns nullable into a null type, converts items, properties and anyOf', () => {
    const schema = fromGeminiSchema(
      {
        type: 'OBJECT',
        properties: {
          name: { type: 'STRING', nullable: true },
          tags: { type: 'ARRAY', items: { type: 'STRING', enum: ['a', 'b'] } },
          either: { anyOf: [{ type: 'NUMBER' }, { type: 'BOOLEAN' }] },
        },
        required: ['name'],
        propertyOrdering: ['name', 'tags'],
      },
      'generationConfig.responseSchema',
    );
    expect(schema).toEqual({
      type: 'object',
      properties: {
        name: { type: ['string', 'null'] },
        tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] } },
        either: { anyOf: [{ type: 'number' }, { type: 'boolean' }] },
      },
      required: ['name'],
    });
  });
});

describe('Gemini request -> chat', () => {
  const base = (contents: GenerateContentRequest['contents'], extra: Partial<GenerateContentRequest> = {}) =>
    geminiToChat({ contents, ...extra } as GenerateContentRequest, 'm', false);

  it('model turns in a row (a streamed answer in history) are one assistant message; a functionResponse answers its call by id', () => {
    const chat = base([
      { role: 'user', parts: [{ text: 'weather?' }] },
      { role: 'model', parts: [{ text: 'Let me ' }] },
      {
        role: 'model',
        parts: [
          { text: 'check.' },
          { functionCall: { id: 'fc-1', name: 'get_weather', args: { city: 'Oslo' } } },
          { functionCall: { name: 'get_weather', args: { city: 'Rome' } } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'get_weather', response: { t: 20 } } },
          { functionResponse: { id: 'fc-1', name: 'get_weather', response: { t: 5 } } },
        ],
      },
    ]);
    expect(chat.messages).toEqual([
      { role: 'user', content: 'weather?' },
      {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [
          { id: 'fc-1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
          { id: 'call_2_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_2_2', content: '{"t":20}' },
      { role: 'tool', tool_call_id: 'fc-1', content: '{"t":5}' },
    ]);
  });

  it('ANY with several allowed names offers only those functions, one of them required', () => {
    const decl = (name: string) => ({ name, parameters: { type: 'OBJECT', properties: {} } });
    const chat = base([{ role: 'user', parts: [{ text: 'x' }] }], {
      tools: [{ functionDeclarations: [decl('a'), decl('b'), decl('c')] }],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['a', 'c'] } },
    });
    expect(chat.tools!.map((t) => t.function.name)).toEqual(['a', 'c']);
    expect(chat.tool_choice).toBe('required');
  });

  it('JSON without a schema is JSON mode; another response MIME type is refused by name', () => {
    expect(base([{ parts: [{ text: 'x' }] }], { generationConfig: { responseMimeType: 'application/json' } }).response_format).toEqual({ type: 'json_object' });
    expect(() => base([{ parts: [{ text: 'x' }] }], { generationConfig: { responseMimeType: 'text/x.enum' } })).toThrow(/generationConfig\.responseMimeType/);
  });
});

describe('chat chunks -> Gemini stream events', () => {
  it('text goes out as it comes; tool calls whole in the last event with finishReason and usage', () => {
    const encoder = new GeminiStreamEncoder({ model: 'm', responseId: 'r' });
    const events = [
      ...encoder.push(chunk({ role: 'assistant', content: 'Hi ' })),
      ...encoder.push(chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"x"' } }] })),
      ...encoder.push(chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'g', arguments: '{}' } }] })),
      ...encoder.push(chunk({ tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }, 'tool_calls')),
      ...encoder.push(chunk({}, null, { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 })),
      ...encoder.end(),
    ];
    expect(events).toEqual([
      { candidates: [{ content: { role: 'model', parts: [{ text: 'Hi ' }] }, index: 0 }], modelVersion: 'm', responseId: 'r' },
      {
        candidates: [
          {
            content: {
              role: 'model',
              parts: [{ functionCall: { id: 'call_a', name: 'f', args: { x: 1 } } }, { functionCall: { id: 'call_b', name: 'g', args: {} } }],
            },
            finishReason: 'STOP',
            index: 0,
          },
        ],
        modelVersion: 'm',
        responseId: 'r',
        usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 3, totalTokenCount: 8 },
      },
    ]);
  });

  it('a failure after the start ends with one Google error event and nothing after it', () => {
    const encoder = new GeminiStreamEncoder({ model: 'm', responseId: 'r' });
    encoder.push(chunk({ content: 'partial' }));
    expect(encoder.fail({ status: 504, message: 'idle' })).toEqual([{ error: { code: 504, message: 'idle', status: 'DEADLINE_EXCEEDED' } }]);
    expect(encoder.end()).toEqual([]);
  });
});
