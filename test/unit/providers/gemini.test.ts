import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../functions/shared/errors';
import { google } from '../../../functions/providers/google';
import { toGeminiSchema } from '../../../functions/providers/_shared/gemini/schema';
import { getAdapter } from '../../../functions/providers/registry';
import type { ChatRequest, ProviderTarget } from '../../../functions/providers/types';
import { contentOf, ctx, run, translateEveryWay } from './stream-helpers';

const target: ProviderTarget = { provider: 'google', apiKey: 'AIza-test' };
const chat = google.chat!;
const bodyOf = (req: ChatRequest, t = target) => JSON.parse(chat.request(req, t).body as string);

function gatewayError(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected a GatewayError');
}

const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather',
    parameters: {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      additionalProperties: false,
      properties: {
        location: { type: 'string', format: 'city' },
        unit: { type: ['string', 'null'], enum: ['c', 'f', null] },
        when: { $ref: '#/$defs/When' },
      },
      required: ['location'],
      $defs: { When: { type: 'string', format: 'date-time', description: 'ISO time' } },
    },
    strict: true,
  },
};

describe('google (Gemini Developer API) requests', () => {
  it('is registered under its slug', async () => {
    expect(await getAdapter('google')).toBe(google);
  });

  it('posts to :generateContent / :streamGenerateContent?alt=sse with x-goog-api-key', () => {
    const req = chat.request({ model: 'gemini-2.0-flash', messages: [{ role: 'user', content: 'Hello' }] }, target);
    expect(req).toEqual({
      url: 'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent',
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'AIza-test' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'Hello' }] }] }),
    });
    const streamed = chat.request({ model: 'models/gemini-2.0-flash', stream: true, messages: [{ role: 'user', content: 'Hi' }] }, target);
    expect(streamed.url).toBe('https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse');
  });

  it('translates a full tool conversation, images, tools and parameters', () => {
    const body = bodyOf({
      model: 'gemini-2.5-flash',
      max_completion_tokens: 256,
      temperature: 0.3,
      top_p: 0.8,
      stop: 'END',
      seed: 7,
      n: 1,
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
      tools: [weatherTool],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'developer', content: [{ type: 'text', text: 'Use metric.' }] },
        { role: 'user', content: 'Look at these.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather in Boston and Paris?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Boston"}' } },
            { id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{"location":"Paris"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_a', content: '{"temp":21}' },
        { role: 'tool', tool_call_id: 'call_b', content: '14:00' },
        { role: 'assistant', content: 'Boston 21C, Paris 14:00.' },
        { role: 'user', content: 'Thanks' },
      ],
    });
    expect(body).toEqual({
      contents: [
        {
          role: 'user',
          parts: [
            { text: 'Look at these.' },
            { text: 'Weather in Boston and Paris?' },
            { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } },
            { fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/cat.jpg' } },
          ],
        },
        {
          role: 'model',
          parts: [{ functionCall: { name: 'get_weather', args: { location: 'Boston' } } }, { functionCall: { name: 'get_time', args: { location: 'Paris' } } }],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'get_weather', response: { temp: 21 } } },
            { functionResponse: { name: 'get_time', response: { content: '14:00' } } },
          ],
        },
        { role: 'model', parts: [{ text: 'Boston 21C, Paris 14:00.' }] },
        { role: 'user', parts: [{ text: 'Thanks' }] },
      ],
      systemInstruction: { parts: [{ text: 'You are terse.' }, { text: 'Use metric.' }] },
      tools: [
        {
          functionDeclarations: [
            {
              name: 'get_weather',
              description: 'Current weather',
              parameters: {
                type: 'object',
                properties: {
                  location: { type: 'string' },
                  unit: { type: 'string', nullable: true, enum: ['c', 'f'] },
                  when: { type: 'string', format: 'date-time', description: 'ISO time' },
                },
                required: ['location'],
              },
            },
          ],
        },
      ],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
      generationConfig: {
        temperature: 0.3,
        topP: 0.8,
        maxOutputTokens: 256,
        stopSequences: ['END'],
        candidateCount: 1,
        seed: 7,
        presencePenalty: 0.1,
        frequencyPenalty: 0.2,
      },
    });
  });

  it('maps tool_choice strings and response_format', () => {
    const base: ChatRequest = { model: 'gemini-2.0-flash', messages: [{ role: 'user', content: 'x' }], tools: [weatherTool] };
    expect(bodyOf({ ...base, tool_choice: 'auto' }).toolConfig).toEqual({ functionCallingConfig: { mode: 'AUTO' } });
    expect(bodyOf({ ...base, tool_choice: 'none' }).toolConfig).toEqual({ functionCallingConfig: { mode: 'NONE' } });
    expect(bodyOf({ ...base, tool_choice: 'required' }).toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY' } });
    expect(bodyOf({ ...base, response_format: { type: 'json_object' } }).generationConfig).toEqual({ responseMimeType: 'application/json' });
    const schema = {
      type: 'object',
      additionalProperties: false,
      properties: { answer: { anyOf: [{ type: 'string' }, { type: 'null' }] }, tags: { type: 'array', items: { const: 'x' } } },
      required: ['answer', 'tags'],
    };
    expect(bodyOf({ ...base, response_format: { type: 'json_schema', json_schema: { name: 'a', schema, strict: true } } }).generationConfig).toEqual({
      responseMimeType: 'application/json',
      responseSchema: {
        type: 'object',
        properties: { answer: { type: 'string', nullable: true }, tags: { type: 'array', items: { enum: ['x'], type: 'string' } } },
        required: ['answer', 'tags'],
      },
    });
  });

  it('rejects a recursive $ref and unknown tool_call_ids with a 400', () => {
    const err = gatewayError(() => toGeminiSchema({ $ref: '#/$defs/N', $defs: { N: { type: 'object', properties: { next: { $ref: '#/$defs/N' } } } } }, 'p'));
    expect(err.status).toBe(400);
    const bad = gatewayError(() => bodyOf({ model: 'gemini-2.0-flash', messages: [{ role: 'tool', tool_call_id: 'nope', content: 'x' }] }));
    expect(bad.param).toBe('messages[0].tool_call_id');
  });

  it('validates the model path segment, needs a key and honours customHost', () => {
    for (const model of ['../v1/files', 'models/../x', 'a b', 'publishers/google/models/x']) {
      expect(gatewayError(() => chat.request({ model, messages: [] }, target)).param).toBe('model');
    }
    expect(gatewayError(() => chat.request({ model: 'gemini-2.0-flash', messages: [] }, { provider: 'google' })).param).toBe('authorization');
    const t: ProviderTarget = { ...target, customHost: 'http://127.0.0.1:9999/gemini/', forwardHeaders: { 'x-gateway-config': 'c', 'x-extra': '1' } };
    const req = chat.request({ model: 'tunedModels/my-tune', messages: [{ role: 'user', content: 'x' }] }, t);
    expect(req.url).toBe('http://127.0.0.1:9999/gemini/tunedModels/my-tune:generateContent');
    expect(req.headers).toEqual({ 'x-extra': '1', 'content-type': 'application/json', 'x-goog-api-key': 'AIza-test' });
    expect(google.baseUrl(t)).toBe('http://127.0.0.1:9999/gemini');
    expect(google.baseUrl(target)).toBe('https://generativelanguage.googleapis.com/v1beta');
  });
});

describe('google responses', () => {
  it('maps text, finish reasons and usage (thoughts count as completion)', () => {
    const out = chat.response(
      {
        candidates: [
          { content: { role: 'model', parts: [{ text: 'thinking…', thought: true }, { text: 'Hello' }, { text: ' there' }] }, finishReason: 'STOP', index: 0 },
        ],
        usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 2, thoughtsTokenCount: 3, cachedContentTokenCount: 1, totalTokenCount: 10 },
        modelVersion: 'gemini-2.5-flash',
        responseId: 'resp-1',
      },
      ctx(),
    );
    expect(out).toEqual({
      id: 'resp-1',
      object: 'chat.completion',
      created: 1700000000,
      model: 'caller-model',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello there', refusal: null }, logprobs: null, finish_reason: 'stop' }],
      usage: {
        prompt_tokens: 5,
        completion_tokens: 5,
        total_tokens: 10,
        prompt_tokens_details: { cached_tokens: 1 },
        completion_tokens_details: { reasoning_tokens: 3 },
      },
    });
    const finish = (finishReason: string) =>
      chat.response({ candidates: [{ content: { parts: [{ text: 'x' }] }, finishReason }] }, ctx()).choices[0]!.finish_reason;
    expect([finish('MAX_TOKENS'), finish('SAFETY'), finish('PROHIBITED_CONTENT'), finish('RECITATION'), finish('OTHER')]).toEqual([
      'length',
      'content_filter',
      'content_filter',
      'stop',
      'stop',
    ]);
    const blocked = chat.response({ promptFeedback: { blockReason: 'SAFETY' } }, ctx());
    expect(blocked.choices).toEqual([
      { index: 0, message: { role: 'assistant', content: null, refusal: null }, logprobs: null, finish_reason: 'content_filter' },
    ]);
    expect(blocked.id).toBe('chatcmpl-gw1');
  });

  it('round-trips tool calls: synthesised ids, names looked up, thought signatures replayed', () => {
    const out = chat.response(
      {
        candidates: [
          {
            content: {
              role: 'model',
              parts: [
                { functionCall: { name: 'get_weather', args: { location: 'Boston' } }, thoughtSignature: 'c2lnLTE=' },
                { functionCall: { name: 'get_time', args: {} } },
              ],
            },
            finishReason: 'STOP',
          },
        ],
      },
      ctx(),
    );
    const choice = out.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    const calls = choice.message.tool_calls!;
    expect(calls.map((c) => c.function)).toEqual([
      { name: 'get_weather', arguments: '{"location":"Boston"}' },
      { name: 'get_time', arguments: '{}' },
    ]);
    expect(calls[0]!.id).toMatch(/^call_[0-9a-f]{24}__thought__c2lnLTE=$/);
    expect(calls[1]!.id).toMatch(/^call_[0-9a-f]{24}$/);

    // The caller sends the assistant turn back with the results.
    const next = bodyOf({
      model: 'gemini-2.5-flash',
      messages: [
        { role: 'user', content: 'Weather and time?' },
        { role: 'assistant', content: null, tool_calls: calls },
        { role: 'tool', tool_call_id: calls[0]!.id, content: 'Sunny' },
        { role: 'tool', tool_call_id: calls[1]!.id, content: [{ type: 'text', text: '{"time":"09:00"}' }] },
      ],
    });
    expect(next.contents).toEqual([
      { role: 'user', parts: [{ text: 'Weather and time?' }] },
      {
        role: 'model',
        parts: [
          { functionCall: { name: 'get_weather', args: { location: 'Boston' } }, thoughtSignature: 'c2lnLTE=' },
          { functionCall: { name: 'get_time', args: {} } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'get_weather', response: { content: 'Sunny' } } },
          { functionResponse: { name: 'get_time', response: { time: '09:00' } } },
        ],
      },
    ]);
  });
});

// Gemini SSE as sent with alt=sse (CRLF separators), each event a whole response object.
const geminiWire =
  'data: {"candidates": [{"content": {"parts": [{"text": "Bonjour, "}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 4,"totalTokenCount": 4},"modelVersion": "gemini-2.0-flash","responseId": "r1"}\r\n\r\n' +
  'data: {"candidates": [{"content": {"parts": [{"text": "ça va ? 👋"}],"role": "model"},"index": 0}],"modelVersion": "gemini-2.0-flash","responseId": "r1"}\r\n\r\n' +
  'data: {"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 4,"candidatesTokenCount": 6,"totalTokenCount": 10},"modelVersion": "gemini-2.0-flash","responseId": "r1"}\r\n\r\n';

describe('google stream', () => {
  it('translates SSE split anywhere (CRLF, mid-character) into OpenAI chunks', () => {
    const out = translateEveryWay(() => chat.stream!(ctx()), geminiWire, '👋');
    expect(out.error).toBeUndefined();
    expect(contentOf(out.chunks)).toBe('Bonjour, ça va ? 👋');
    expect(out.chunks.map((c) => c.choices[0]!.delta)).toEqual([{ role: 'assistant', content: 'Bonjour, ' }, { content: 'ça va ? 👋' }, {}]);
    expect(out.chunks.map((c) => c.choices[0]!.finish_reason)).toEqual([null, null, 'stop']);
    expect(out.chunks.every((c) => c.id === 'chatcmpl-gw1' && c.model === 'caller-model' && !('usage' in c))).toBe(true);
    expect(out.usage).toEqual({
      prompt_tokens: 4,
      completion_tokens: 6,
      total_tokens: 10,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
    });
  });

  it('emits the usage chunk at the end when asked for', () => {
    const out = translateEveryWay(() => chat.stream!(ctx({ includeUsage: true })), geminiWire);
    expect(out.chunks).toHaveLength(4);
    expect(out.chunks[3]).toEqual({
      id: 'chatcmpl-gw1',
      object: 'chat.completion.chunk',
      created: 1700000000,
      model: 'caller-model',
      choices: [],
      usage: out.usage,
    });
    expect(out.chunks.slice(0, 3).every((c) => c.usage === null)).toBe(true);
  });

  it('streams function calls with indexes and finishes with tool_calls', () => {
    const wire =
      'data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"location":"Boston"}}}]},"index":0}]}\n\n' +
      'data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_time","args":{}}}]},"finishReason":"STOP","index":0}]}\n\n';
    const out = run(chat.stream!(ctx()), [Buffer.from(wire)]);
    const calls = out.chunks.flatMap((c) => c.choices[0]!.delta.tool_calls ?? []);
    expect(calls.map(({ id, ...rest }) => rest)).toEqual([
      { index: 0, type: 'function', function: { name: 'get_weather', arguments: '{"location":"Boston"}' } },
      { index: 1, type: 'function', function: { name: 'get_time', arguments: '{}' } },
    ]);
    expect(calls.every((c) => /^call_/.test(c.id!))).toBe(true);
    expect(out.chunks.at(-1)!.choices[0]!.finish_reason).toBe('tool_calls');
  });

  it('reports an error event and invalid JSON as StreamErrors', () => {
    const err = run(chat.stream!(ctx()), [Buffer.from('data: {"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}\r\n\r\n')]);
    expect(err.error).toEqual({ status: 429, message: 'Resource exhausted', type: 'rate_limit_error', code: 'RESOURCE_EXHAUSTED' });
    const bad = run(chat.stream!(ctx()), [Buffer.from('data: {not json\n\n')]);
    expect(bad.error?.status).toBe(502);
  });
});

describe('google embeddings', () => {
  it('uses :batchEmbedContents and maps back to the OpenAI shape (float or base64)', () => {
    const emb = google.embeddings!;
    const req = emb.request({ model: 'text-embedding-004', input: ['a', 'b'], dimensions: 3 }, target);
    expect(req.url).toBe('https://generativelanguage.googleapis.com/v1beta/models/text-embedding-004:batchEmbedContents');
    expect(JSON.parse(req.body as string)).toEqual({
      requests: [
        { model: 'models/text-embedding-004', content: { parts: [{ text: 'a' }] }, outputDimensionality: 3 },
        { model: 'models/text-embedding-004', content: { parts: [{ text: 'b' }] }, outputDimensionality: 3 },
      ],
    });
    const upstream = { embeddings: [{ values: [0.5, -1, 2] }, { values: [1, 0, 0] }] };
    expect(emb.response!(upstream, ctx({ model: 'text-embedding-004' }))).toEqual({
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: [0.5, -1, 2] },
        { object: 'embedding', index: 1, embedding: [1, 0, 0] },
      ],
      model: 'text-embedding-004',
      usage: { prompt_tokens: 0, total_tokens: 0 },
    });
    const b64 = emb.response!(upstream, ctx(), { model: 'm', input: 'a', encoding_format: 'base64' }).data[0]!.embedding as string;
    expect(Array.from(new Float32Array(new Uint8Array(Buffer.from(b64, 'base64')).buffer))).toEqual([0.5, -1, 2]);
    expect(gatewayError(() => emb.request({ model: 'text-embedding-004', input: [1, 2, 3] }, target)).param).toBe('input');
  });
});
