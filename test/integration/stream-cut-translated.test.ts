import type { ServerResponse } from 'node:http';
import Anthropic, { APIError as AnthropicAPIError } from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startFaultyUpstream, type FaultyUpstream } from '../fakes/faulty-upstream';
import { startChildGateway } from '../support/child-gateway';
import { startTestGateway } from '../support/gateway';
import { startScripted } from '../support/stream-faults';

// Issue 33, item 5: a translated stream the provider cuts right after its first events. The
// gateway runs as its own process (the cut and the events arrive as they would from a real
// provider); the callers are the real SDKs. What the caller must get: the events' text, then
// the SDK's stream error, never a 502 before any event. A cut before any event stays the
// attempt's failure (fallback applies).

type Scripted = Awaited<ReturnType<typeof startScripted>>;
let gw: LocalGateway;
let child: Awaited<ReturnType<typeof startChildGateway>>;
let openaiCut: Scripted;
let anthropicCut: Scripted;
let fake: FaultyUpstream;

const SSE = { 'content-type': 'text/event-stream' };
const chatChunk = (delta: Record<string, unknown>) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
const anthropicEvent = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** Head and first events in one burst (as one TCP segment would carry them), then a reset. */
async function burstThenReset(res: ServerResponse, events: string[]): Promise<void> {
  res.writeHead(200, SSE);
  const last = events.pop()!;
  for (const e of events) res.write(e);
  await new Promise((r) => res.write(last, r));
  res.socket?.resetAndDestroy();
}

beforeAll(async () => {
  openaiCut = await startScripted((res) => burstThenReset(res, [chatChunk({ role: 'assistant', content: '' }), chatChunk({ content: 'first words' })]));
  anthropicCut = await startScripted((res) =>
    burstThenReset(res, [
      anthropicEvent('message_start', {
        message: {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'claude',
          content: [],
          stop_reason: null,
          usage: { input_tokens: 3, output_tokens: 0 },
        },
      }),
      anthropicEvent('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      anthropicEvent('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'first words' } }),
    ]),
  );
  fake = await startFaultyUpstream();
  gw = await startTestGateway();
  child = await startChildGateway(gw);
}, 60_000);
afterAll(async () => {
  await child?.stop();
  await gw?.stop();
  await Promise.all([openaiCut?.close(), anthropicCut?.close(), fake?.close()]);
});

const providerHeaders = (provider: string, host: string) => ({
  'x-gateway-api-key': child.adminKey,
  'x-gateway-provider': provider,
  'x-gateway-custom-host': `${host}/v1`,
  authorization: 'Bearer sk-upstream',
});

/** Iterate a stream to its end or its error: the text seen first, then what was thrown. */
async function readAll<T>(stream: AsyncIterable<T>, textOf: (event: T) => string | undefined): Promise<{ text: string; error: unknown }> {
  let text = '';
  try {
    for await (const event of stream) text += textOf(event) ?? '';
  } catch (error) {
    return { text, error };
  }
  return { text, error: undefined };
}

// The cut races the first events inside the gateway; a few rounds make a lost event show.
const ROUNDS = 5;

describe('a translated stream cut after its first events', () => {
  it('/v1/messages on an OpenAI-shaped provider (@anthropic-ai/sdk): the text, then the SDK raises the stream error', async () => {
    const client = new Anthropic({ baseURL: child.url, apiKey: 'unused', maxRetries: 0, defaultHeaders: providerHeaders('openai', openaiCut.url) });
    for (let round = 0; round < ROUNDS; round++) {
      const stream = await client.messages.create({ model: 'gpt-4o-mini', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hi' }] });
      const { text, error } = await readAll(stream, (e) => (e.type === 'content_block_delta' && e.delta.type === 'text_delta' ? e.delta.text : undefined));
      expect(text).toBe('first words');
      expect(error).toBeInstanceOf(AnthropicAPIError);
      expect((error as AnthropicAPIError).status).toBeUndefined(); // an error event, not an HTTP status
      expect((error as Error).message).toMatch(/ended before it was complete|broke before/);
    }
  });

  it('/v1/responses on a provider without a Responses API (openai SDK): the text, then the SDK raises the stream error', async () => {
    const client = new OpenAI({ baseURL: `${child.url}/v1`, apiKey: 'unused', maxRetries: 0, defaultHeaders: providerHeaders('vllm', openaiCut.url) });
    for (let round = 0; round < ROUNDS; round++) {
      const stream = await client.responses.create({ model: 'm', input: 'hi', stream: true });
      const { text, error } = await readAll(stream, (e) => (e.type === 'response.output_text.delta' ? e.delta : undefined));
      expect(text).toBe('first words');
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect((error as Error).message).toMatch(/ended before it was complete|broke before/);
    }
  });

  it('/v1/chat/completions on an Anthropic-backed provider (openai SDK): the text, then the SDK raises the stream error', async () => {
    const client = new OpenAI({ baseURL: `${child.url}/v1`, apiKey: 'unused', maxRetries: 0, defaultHeaders: providerHeaders('anthropic', anthropicCut.url) });
    for (let round = 0; round < ROUNDS; round++) {
      const stream = await client.chat.completions.create({ model: 'claude', stream: true, messages: [{ role: 'user', content: 'hi' }] });
      const { text, error } = await readAll(stream, (c) => c.choices[0]?.delta.content ?? undefined);
      expect(text).toBe('first words');
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect((error as Error).message).toMatch(/ended before it was complete|broke before/);
    }
  });
});

describe('a cut before the first event is the attempt failing', () => {
  it('fallback applies: the second target answers, whole', async () => {
    const target = (model: string) => ({ provider: 'openai', api_key: 'sk-fault', custom_host: `${fake.url}/v1`, override_params: { model } });
    const client = new Anthropic({
      baseURL: child.url,
      apiKey: 'unused',
      maxRetries: 0,
      defaultHeaders: {
        'x-gateway-api-key': child.adminKey,
        'x-gateway-config': JSON.stringify({ strategy: { mode: 'fallback' }, targets: [target('fault-reset-before-headers'), target('fault-ok')] }),
      },
    });
    const stream = await client.messages.create({ model: 'm', max_tokens: 20, stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const { text, error } = await readAll(stream, (e) => (e.type === 'content_block_delta' && e.delta.type === 'text_delta' ? e.delta.text : undefined));
    expect(error).toBeUndefined();
    expect(text).toBe('ok');
    expect(fake.requests.map((r) => r.mode)).toEqual(['reset-before-headers', 'ok']);
  });
});
