import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { LocalGateway } from '../../infra/local/server';
import { startAllFakes, type AllFakes, type FakeServer } from '../fakes';
import { FAKE_AWS, manageFakes } from '../support/managed-fakes';
import { call, startTestGateway } from '../support/gateway';

// The response cache (`cache: {mode: "simple"}` in the config) on the Messages and Responses
// routes, through the real clients, on an OpenAI-shaped and an Anthropic upstream: a repeated
// request is answered from the cache (the upstream saw one request), a streamed answer is
// replayed as its own dialect's events, and namespaces and force-refresh work as on chat.
let gw: LocalGateway;
let fakes: AllFakes;

beforeAll(async () => {
  fakes = await startAllFakes({}, { credentials: FAKE_AWS });
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0' } });
  await manageFakes(gw, fakes, 'dc');
  // An OpenAI-shaped provider other than OpenAI: /v1/responses is translated for it.
  const mistral = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'dc-mistral', provider: 'mistral-ai', api_key: 'sk-mistral', custom_host: `${fakes.openai.url}/v1` },
  });
  expect(mistral.status, mistral.text).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await fakes?.close();
});
beforeEach(() => fakes.reset());

interface Backend {
  name: string;
  /** Managed provider for /v1/messages. */
  messages: string;
  /** Managed provider for /v1/responses. */
  responses: string;
  model: string;
  fake: () => FakeServer;
}

const BACKENDS: Backend[] = [
  { name: 'OpenAI-backed', messages: 'dc-openai', responses: 'dc-mistral', model: 'gpt-4o-mini', fake: () => fakes.openai },
  { name: 'Anthropic-backed', messages: 'dc-claude', responses: 'dc-claude', model: 'claude-haiku-4-5', fake: () => fakes.anthropic },
];

const cacheConfig = (slug: string) => JSON.stringify({ provider: `@${slug}`, cache: { mode: 'simple', max_age: 600 } });

const anthropic = (slug: string, headers: Record<string, string> = {}) =>
  new Anthropic({
    baseURL: gw.url,
    apiKey: 'unused',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-config': cacheConfig(slug), ...headers },
  });

const openai = (slug: string, headers: Record<string, string> = {}) =>
  new OpenAI({
    baseURL: `${gw.url}/v1`,
    apiKey: 'unused',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-config': cacheConfig(slug), ...headers },
  });

let seq = 0;
const unique = (what: string) => `${what} ${Date.now()} ${seq++}`;

/**
 * The cache is written after the response has gone out, so the next identical request may
 * still miss: repeat until it hits (each miss is one more upstream request, counted).
 */
async function untilHit<T>(send: () => Promise<{ status: string | null; value: T }>): Promise<{ value: T; misses: number }> {
  for (let misses = 0; misses < 50; misses++) {
    const r = await send();
    if (r.status === 'HIT') return { value: r.value, misses };
    expect(r.status).toBe('MISS');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('never a cache hit');
}

describe.each(BACKENDS)('$name: /v1/messages through @anthropic-ai/sdk', (b) => {
  const ask = (text: string): Anthropic.MessageCreateParamsNonStreaming => ({
    model: b.model,
    max_tokens: 100,
    messages: [{ role: 'user', content: text }],
  });

  it('a repeated message is a HIT: same answer, the upstream asked once', async () => {
    const body = ask(unique('cache messages'));
    const first = await anthropic(b.messages).messages.create(body).withResponse();
    expect(first.response.headers.get('x-gateway-cache-status')).toBe('MISS');
    const send = async () => {
      const r = await anthropic(b.messages).messages.create(body).withResponse();
      return { status: r.response.headers.get('x-gateway-cache-status'), value: r.data };
    };
    const { value: hit, misses } = await untilHit(send);
    expect(hit.content).toEqual(first.data.content);
    expect(hit.type).toBe('message');
    expect(b.fake().count()).toBe(1 + misses);
    const again = await send();
    expect(again.status).toBe('HIT');
    expect(b.fake().count()).toBe(1 + misses);
  });

  it('a streamed answer is replayed from the cache as Messages events', async () => {
    const body = { ...ask(unique('cache stream messages')), stream: true as const };
    const collect = async () => {
      const { data: stream, response } = await anthropic(b.messages).messages.create(body).withResponse();
      const types: string[] = [];
      let text = '';
      for await (const event of stream) {
        types.push(event.type);
        if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
      }
      return { status: response.headers.get('x-gateway-cache-status'), value: { types, text } };
    };
    const first = await collect();
    expect(first.status).toBe('MISS');
    const { value: hit, misses } = await untilHit(collect);
    expect(hit.text).toBe(first.value.text);
    expect(hit.text).toContain('echo: cache stream messages');
    expect(hit.types[0]).toBe('message_start');
    expect(hit.types.at(-1)).toBe('message_stop');
    expect(hit.types).toContain('content_block_delta');
    expect(b.fake().count()).toBe(1 + misses);
  });

  it('namespaces partition the cache; force-refresh asks the provider again', async () => {
    const body = ask(unique('cache namespace messages'));
    const inA = { 'x-gateway-cache-namespace': 'a' };
    await anthropic(b.messages, inA).messages.create(body);
    await untilHit(async () => {
      const r = await anthropic(b.messages, inA).messages.create(body).withResponse();
      return { status: r.response.headers.get('x-gateway-cache-status'), value: r.data };
    });
    const inB = await anthropic(b.messages, { 'x-gateway-cache-namespace': 'b' }).messages.create(body).withResponse();
    expect(inB.response.headers.get('x-gateway-cache-status')).toBe('MISS');
    const before = b.fake().count();
    const refreshed = await anthropic(b.messages, { ...inA, 'x-gateway-cache-force-refresh': 'true' })
      .messages.create(body)
      .withResponse();
    expect(refreshed.response.headers.get('x-gateway-cache-status')).toBe('REFRESH');
    expect(b.fake().count()).toBe(before + 1);
  });
});

describe.each(BACKENDS)('$name: /v1/responses through the openai SDK', (b) => {
  const ask = (text: string) => ({ model: b.model, input: text, max_output_tokens: 100 });

  it('a repeated response is a HIT with a fresh response id, and each is stored', async () => {
    const body = ask(unique('cache responses'));
    const first = await openai(b.responses).responses.create(body).withResponse();
    expect(first.response.headers.get('x-gateway-cache-status')).toBe('MISS');
    const send = async () => {
      const r = await openai(b.responses).responses.create(body).withResponse();
      return { status: r.response.headers.get('x-gateway-cache-status'), value: r.data };
    };
    const { value: hit, misses } = await untilHit(send);
    expect(hit.output_text).toBe(first.data.output_text);
    expect(b.fake().count()).toBe(1 + misses);
    // A cached answer is a new response: its own id, stored, so previous_response_id finds it.
    expect(hit.id).not.toBe(first.data.id);
    const stored = await call(gw, 'GET', `/v1/responses/${hit.id}`);
    expect(stored.status, stored.text).toBe(200);
    expect(stored.body.output_text ?? stored.body.output?.[0]?.content?.[0]?.text).toBe(first.data.output_text);
  });

  it('a streamed answer is replayed from the cache as Responses events', async () => {
    const body = { ...ask(unique('cache stream responses')), stream: true as const };
    const collect = async () => {
      const { data: stream, response } = await openai(b.responses).responses.create(body).withResponse();
      const types: string[] = [];
      let text = '';
      for await (const event of stream) {
        types.push(event.type);
        if (event.type === 'response.output_text.delta') text += event.delta;
      }
      return { status: response.headers.get('x-gateway-cache-status'), value: { types, text } };
    };
    const first = await collect();
    expect(first.status).toBe('MISS');
    const { value: hit, misses } = await untilHit(collect);
    expect(hit.text).toBe(first.value.text);
    expect(hit.text).toContain('echo: cache stream responses');
    expect(hit.types[0]).toBe('response.created');
    expect(hit.types.at(-1)).toBe('response.completed');
    expect(b.fake().count()).toBe(1 + misses);
  });

  it('namespaces partition the cache; force-refresh asks the provider again', async () => {
    const body = ask(unique('cache namespace responses'));
    const inA = { 'x-gateway-cache-namespace': 'a' };
    await openai(b.responses, inA).responses.create(body);
    await untilHit(async () => {
      const r = await openai(b.responses, inA).responses.create(body).withResponse();
      return { status: r.response.headers.get('x-gateway-cache-status'), value: r.data };
    });
    const inB = await openai(b.responses, { 'x-gateway-cache-namespace': 'b' }).responses.create(body).withResponse();
    expect(inB.response.headers.get('x-gateway-cache-status')).toBe('MISS');
    const before = b.fake().count();
    const refreshed = await openai(b.responses, { ...inA, 'x-gateway-cache-force-refresh': 'true' })
      .responses.create(body)
      .withResponse();
    expect(refreshed.response.headers.get('x-gateway-cache-status')).toBe('REFRESH');
    expect(b.fake().count()).toBe(before + 1);
  });
});

describe('/v1/responses passed through to OpenAI (native)', () => {
  /** OpenAI's Responses API, as the fake does not speak it: a response object per request, each with its own id. */
  /** OpenAI's Responses stream for a text answer (abridged to the events the SDK needs). */
  const nativeEvents = (seq: number, text: string) => {
    const response = { id: `resp_native${seq}`, object: 'response', created_at: 1, model: 'gpt-4o-mini', output: [] as unknown[] };
    const item = { type: 'message', id: `msg_${seq}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] };
    const events = [
      { type: 'response.created', sequence_number: 0, response: { ...response, status: 'in_progress' } },
      { type: 'response.output_text.delta', sequence_number: 1, item_id: item.id, output_index: 0, content_index: 0, delta: text },
      { type: 'response.completed', sequence_number: 2, response: { ...response, status: 'completed', output: [item] } },
    ];
    return events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('');
  };

  const respondAsOpenAI = () =>
    fakes.openai.setBehaviour({
      respond: (req) => {
        if (req.path !== '/v1/responses') return undefined;
        const input = String((req.body as { input?: unknown }).input);
        const text = `echo: ${input}`;
        if ((req.body as { stream?: unknown }).stream === true)
          return { status: 200, headers: { 'content-type': 'text/event-stream' }, body: nativeEvents(req.seq, text) };
        return {
          status: 200,
          body: {
            id: `resp_native${req.seq}`,
            object: 'response',
            created_at: 1,
            status: 'completed',
            model: 'gpt-4o-mini',
            output: [
              { type: 'message', id: `msg_${req.seq}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] },
            ],
            usage: {
              input_tokens: 3,
              input_tokens_details: { cached_tokens: 0 },
              output_tokens: 3,
              output_tokens_details: { reasoning_tokens: 0 },
              total_tokens: 6,
            },
          },
        };
      },
    });

  it('store: false is cached: a HIT, the provider asked once', async () => {
    respondAsOpenAI();
    const body = { model: 'gpt-4o-mini', input: unique('native cache'), store: false };
    const first = await openai('dc-openai').responses.create(body).withResponse();
    expect(first.response.headers.get('x-gateway-cache-status')).toBe('MISS');
    const { value: hit, misses } = await untilHit(async () => {
      const r = await openai('dc-openai').responses.create(body).withResponse();
      return { status: r.response.headers.get('x-gateway-cache-status'), value: r.data };
    });
    expect(hit.output_text).toBe(first.data.output_text);
    expect(fakes.openai.count('/v1/responses')).toBe(1 + misses);
  });

  it('store: false, streamed: replayed from the cache as the same Responses events', async () => {
    respondAsOpenAI();
    const body = { model: 'gpt-4o-mini', input: unique('native stream cache'), store: false, stream: true as const };
    const collect = async () => {
      const { data: stream, response } = await openai('dc-openai').responses.create(body).withResponse();
      const types: string[] = [];
      let text = '';
      for await (const event of stream) {
        types.push(event.type);
        if (event.type === 'response.output_text.delta') text += event.delta;
      }
      return { status: response.headers.get('x-gateway-cache-status'), value: { types, text } };
    };
    const first = await collect();
    expect(first.status).toBe('MISS');
    const { value: hit, misses } = await untilHit(collect);
    expect(hit).toEqual(first.value);
    expect(hit.types).toEqual(['response.created', 'response.output_text.delta', 'response.completed']);
    expect(fakes.openai.count('/v1/responses')).toBe(1 + misses);
  });

  it('a stored response (store: true, the default) is never replayed: each call is a new OpenAI object with its own id', async () => {
    respondAsOpenAI();
    const body = { model: 'gpt-4o-mini', input: unique('native stored') };
    const first = await openai('dc-openai').responses.create(body).withResponse();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const second = await openai('dc-openai').responses.create(body).withResponse();
    expect(second.response.headers.get('x-gateway-cache-status')).toBeNull();
    expect(second.data.id).not.toBe(first.data.id);
    expect(fakes.openai.count('/v1/responses')).toBe(2);
  });
});
