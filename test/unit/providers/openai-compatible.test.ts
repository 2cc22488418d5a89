import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../functions/shared/errors';
import { deepseek } from '../../../functions/providers/deepseek';
import { fireworksAi } from '../../../functions/providers/fireworks-ai';
import { groq } from '../../../functions/providers/groq';
import { mistralAi, mistralToolCallId } from '../../../functions/providers/mistral-ai';
import { ollama } from '../../../functions/providers/ollama';
import { openai } from '../../../functions/providers/openai';
import { openrouter } from '../../../functions/providers/openrouter';
import { togetherAi } from '../../../functions/providers/together-ai';
import type { ChatRequest, ProviderAdapter, ProviderTarget } from '../../../functions/providers/types';
import { contentOf, ctx, translateEveryWay } from './stream-helpers';

const key = (provider: string, over: Partial<ProviderTarget> = {}): ProviderTarget => ({ provider, apiKey: 'sk-test', ...over });
const hello: ChatRequest = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] };

function sse(events: unknown[], done = true): string {
  return events.map((e) => `data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`).join('') + (done ? 'data: [DONE]\n\n' : '');
}

const base = { object: 'chat.completion.chunk', created: 1694268190, model: 'm', system_fingerprint: 'fp_44709d6fcb' };
const c = (id: string, delta: object, finish: string | null = null, extra: object = {}) => ({
  id,
  ...base,
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  ...extra,
});

describe('openai', () => {
  it('passes the chat body through to /v1/chat/completions with a Bearer key', () => {
    const req = openai.chat!.request({ ...hello, stream: true, stream_options: { include_usage: true } }, key('openai'));
    expect(req).toEqual({
      url: 'https://api.openai.com/v1/chat/completions',
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
      body: JSON.stringify({ ...hello, stream: true, stream_options: { include_usage: true } }),
    });
    expect(openai.chat!.stream).toBeUndefined();
  });

  it('serves embeddings and audio OpenAI-style', () => {
    const req = openai.embeddings!.request({ model: 'text-embedding-3-small', input: 'hi' }, key('openai'));
    expect(req.url).toBe('https://api.openai.com/v1/embeddings');
    expect(openai.embeddings!.response).toBeUndefined();
    expect(openai.audio).toEqual({ speech: true, transcriptions: true, translations: true });
  });

  it('honours a custom host (trailing slash stripped) and merges forwarded headers', () => {
    const target = key('openai', {
      customHost: 'https://llm.internal.example/v1//',
      forwardHeaders: { 'OpenAI-Organization': 'org-1', 'x-gateway-api-key': 'gw-secret', Authorization: 'Bearer caller', Host: 'evil' },
    });
    expect(openai.baseUrl(target)).toBe('https://llm.internal.example/v1');
    const req = openai.chat!.request(hello, target);
    expect(req.url).toBe('https://llm.internal.example/v1/chat/completions');
    expect(req.headers).toEqual({ 'openai-organization': 'org-1', authorization: 'Bearer sk-test', 'content-type': 'application/json' });
  });

  it('answers 400 when the provider key is missing', () => {
    const err = (() => {
      try {
        openai.chat!.request(hello, { provider: 'openai' });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).status).toBe(400);
    expect(() => openai.authHeaders({ provider: 'openai' })).toThrow(GatewayError);
  });
});

describe('pass-through family: base URLs', () => {
  const cases: Array<[ProviderAdapter, string]> = [
    [deepseek, 'https://api.deepseek.com/chat/completions'],
    [fireworksAi, 'https://api.fireworks.ai/inference/v1/chat/completions'],
    [openrouter, 'https://openrouter.ai/api/v1/chat/completions'],
    [groq, 'https://api.groq.com/openai/v1/chat/completions'],
    [togetherAi, 'https://api.together.xyz/v1/chat/completions'],
    [mistralAi, 'https://api.mistral.ai/v1/chat/completions'],
  ];
  it.each(cases)('%#: chat URL and Bearer auth', (adapter, url) => {
    const req = adapter.chat!.request(hello, key(adapter.slug));
    expect(req.url).toBe(url);
    expect(req.headers.authorization).toBe('Bearer sk-test');
  });

  it('deepseek, fireworks and openrouter stream bytes through (no translator)', () => {
    for (const a of [deepseek, fireworksAi, openrouter, ollama]) expect(a.chat!.stream).toBeUndefined();
  });
});

describe('ollama', () => {
  it('needs no key and uses the /v1 OpenAI layer', () => {
    const req = ollama.chat!.request(hello, { provider: 'ollama' });
    expect(req.url).toBe('http://localhost:11434/v1/chat/completions');
    expect(req.headers).toEqual({ 'content-type': 'application/json' });
    expect(ollama.embeddings!.request({ model: 'nomic-embed-text', input: 'x' }, { provider: 'ollama' }).url).toBe('http://localhost:11434/v1/embeddings');
  });

  it('sends a key when given, adds /v1 to a bare custom host and keeps a custom path', () => {
    expect(ollama.chat!.request(hello, key('ollama')).headers.authorization).toBe('Bearer sk-test');
    expect(ollama.baseUrl({ provider: 'ollama', customHost: 'http://gpu-box:11434/' })).toBe('http://gpu-box:11434/v1');
    expect(ollama.baseUrl({ provider: 'ollama', customHost: 'https://proxy.example/ollama/v1' })).toBe('https://proxy.example/ollama/v1');
    expect(() => ollama.baseUrl({ provider: 'ollama', customHost: 'not a url' })).toThrow(GatewayError);
  });
});

describe('mistral-ai', () => {
  const conversation: ChatRequest = {
    model: 'mistral-large-latest',
    seed: 7,
    max_completion_tokens: 50,
    tool_choice: 'required',
    stream: true,
    stream_options: { include_usage: true },
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } }],
    messages: [
      { role: 'user', content: 'Weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_abc123', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'D681PevKs', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_abc123', content: '18C' },
      { role: 'tool', tool_call_id: 'D681PevKs', content: '24C' },
    ],
  };

  it('renames seed, tool_choice and max_completion_tokens, drops stream_options', () => {
    const body = JSON.parse(mistralAi.chat!.request(conversation, key('mistral-ai')).body as string);
    expect(body.random_seed).toBe(7);
    expect(body.seed).toBeUndefined();
    expect(body.tool_choice).toBe('any');
    expect(body.max_tokens).toBe(50);
    expect(body.max_completion_tokens).toBeUndefined();
    expect(body.stream_options).toBeUndefined();
    expect(body.stream).toBe(true);
  });

  it('rewrites tool-call ids to 9 alphanumerics, the same way in calls and results and across requests', () => {
    const body = JSON.parse(mistralAi.chat!.request(conversation, key('mistral-ai')).body as string);
    const [first, second] = body.messages[1].tool_calls;
    expect(first.id).toMatch(/^[a-zA-Z0-9]{9}$/);
    expect(first.id).not.toBe('call_abc123');
    expect(second.id).toBe('D681PevKs');
    expect(body.messages[2].tool_call_id).toBe(first.id);
    expect(body.messages[3].tool_call_id).toBe('D681PevKs');
    expect(mistralToolCallId('call_abc123')).toBe(first.id);
    expect(mistralToolCallId('toolu_01A09q90qw90lq917835lq9')).toMatch(/^[a-zA-Z0-9]{9}$/);
  });

  it('maps finish_reason model_length to length in responses', () => {
    const upstream = {
      id: 'cmpl-e5cc70bb28c444948073e77776eb30ef',
      object: 'chat.completion',
      created: 1702256327,
      model: 'mistral-large-latest',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Once upon' }, finish_reason: 'model_length' }],
      usage: { prompt_tokens: 16, completion_tokens: 34, total_tokens: 50 },
    };
    const out = mistralAi.chat!.response(upstream, ctx());
    expect(out.choices[0]!.finish_reason).toBe('length');
    expect(out.usage).toEqual(upstream.usage);
  });

  const wire = sse([
    c('cmpl-1', { role: 'assistant', content: '' }),
    c('cmpl-1', { content: 'Bonjour 🌍 ' }),
    c('cmpl-1', { content: 'à tous' }, 'model_length', { usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 } }),
  ]);

  it('streams with model_length fixed and usage only in a final chunk when asked', () => {
    const withUsage = translateEveryWay(() => mistralAi.chat!.stream!(ctx({ includeUsage: true })), wire, '🌍');
    expect(contentOf(withUsage.chunks)).toBe('Bonjour 🌍 à tous');
    expect(withUsage.chunks.map((x) => (x.choices.length ? x.choices[0]!.finish_reason : 'usage'))).toEqual([null, null, 'length', 'usage']);
    expect(withUsage.chunks[2]!.usage).toBeNull();
    expect(withUsage.chunks[3]).toEqual({
      id: 'cmpl-1',
      object: 'chat.completion.chunk',
      created: 1694268190,
      model: 'm',
      choices: [],
      usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 },
    });

    const without = translateEveryWay(() => mistralAi.chat!.stream!(ctx()), wire, '🌍');
    expect(without.chunks).toHaveLength(3);
    expect(without.chunks.every((x) => !('usage' in x))).toBe(true);
    expect(without.usage).toEqual({ prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 });
  });
});

describe('groq', () => {
  const groqUsage = {
    queue_time: 0.0178,
    prompt_tokens: 19,
    prompt_time: 0.0021,
    completion_tokens: 10,
    completion_time: 0.008,
    total_tokens: 29,
    total_time: 0.0101,
  };
  const wire =
    ': keep-alive\n\n' +
    sse([
      c('chatcmpl-4a0f', { role: 'assistant', content: '' }, null, { x_groq: { id: 'req_01jq' } }),
      c('chatcmpl-4a0f', { content: 'Héllo, 世界' }),
      c('chatcmpl-4a0f', {}, 'stop', { x_groq: { id: 'req_01jq', usage: groqUsage } }),
    ]) +
    'data: {"late":"ignored after [DONE]"}\n\n';

  it('moves x_groq.usage to a final usage chunk (only with include_usage)', () => {
    const out = translateEveryWay(() => groq.chat!.stream!(ctx({ includeUsage: true })), wire, '世');
    expect(contentOf(out.chunks)).toBe('Héllo, 世界');
    expect(out.chunks).toHaveLength(4);
    expect(out.chunks[2]!.choices[0]!.finish_reason).toBe('stop');
    expect((out.chunks[2] as unknown as { x_groq: unknown }).x_groq).toEqual({ id: 'req_01jq' });
    expect(out.chunks[3]!.choices).toEqual([]);
    expect(out.chunks[3]!.usage).toEqual(groqUsage);
    expect(out.error).toBeUndefined();

    const plain = translateEveryWay(() => groq.chat!.stream!(ctx()), wire, '世');
    expect(plain.chunks).toHaveLength(3);
    expect(plain.usage).toEqual(groqUsage);
  });

  it('accepts top-level usage in a choices-less chunk, sending it once', () => {
    const usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 };
    const wire2 = sse([c('x', { content: 'hi' }, 'stop'), { id: 'x', ...base, choices: [], usage, x_groq: { id: 'r', usage } }]);
    const out = translateEveryWay(() => groq.chat!.stream!(ctx({ includeUsage: true })), wire2);
    expect(out.chunks.map((x) => x.choices.length)).toEqual([1, 0]);
    expect(out.chunks[1]!.usage).toEqual(usage);
  });

  it('turns a mid-stream error object into a StreamError and stops', () => {
    const wire3 = sse([
      c('x', { content: 'par' }),
      { error: { message: 'Rate limit reached', type: 'tokens', code: 'rate_limit_exceeded' } },
      c('x', { content: 'tial' }),
    ]);
    const out = translateEveryWay(() => groq.chat!.stream!(ctx()), wire3);
    expect(contentOf(out.chunks)).toBe('par');
    expect(out.error).toEqual({ status: 502, message: 'Rate limit reached', type: 'tokens', code: 'rate_limit_exceeded' });
  });

  it('reports a chunk that is not JSON', () => {
    const out = translateEveryWay(() => groq.chat!.stream!(ctx()), 'data: {"id":\n\n');
    expect(out.error?.code).toBe('invalid_upstream_chunk');
  });

  it('serves audio and has no embeddings', () => {
    expect(groq.audio).toEqual({ speech: true, transcriptions: true, translations: true });
    expect(groq.embeddings).toBeUndefined();
  });
});

describe('together-ai', () => {
  it('maps eos to stop in responses and streams; final chunk usage moves to the usage chunk', () => {
    const resp = togetherAi.chat!.response(
      {
        id: 'r1',
        object: 'chat.completion',
        created: 1,
        model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'eos' }],
      },
      ctx(),
    );
    expect(resp.choices[0]!.finish_reason).toBe('stop');

    const usage = { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 };
    const wire = sse([c('t1', { role: 'assistant', content: '' }), c('t1', { content: 'ok' }), c('t1', {}, 'eos', { usage })]);
    const out = translateEveryWay(() => togetherAi.chat!.stream!(ctx({ includeUsage: true })), wire);
    expect(out.chunks.map((x) => (x.choices.length ? x.choices[0]!.finish_reason : 'usage'))).toEqual([null, null, 'stop', 'usage']);
    expect(out.chunks[3]!.usage).toEqual(usage);
  });

  it('ends cleanly when the upstream closes without [DONE]', () => {
    const wire = sse([c('t1', { content: 'ok' }, 'stop')], false).trimEnd();
    const out = translateEveryWay(() => togetherAi.chat!.stream!(ctx()), wire);
    expect(out.chunks).toHaveLength(1);
    expect(out.error).toBeUndefined();
  });
});
