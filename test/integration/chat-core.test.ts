import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import type { ChatCompletionChunk, ChatRequest } from '../../functions/providers/types';
import type { CallerRequest } from '../../functions/shared/http/types';
import type { RequestFacts } from '../../functions/spend/request-record';
import { startAnthropicFake, startOpenAIFake, type FakeServer } from '../fakes';
import { startTestGateway } from '../support/gateway';

/**
 * The chat core called in-process, as assistants and prompts call it: outcomes as values,
 * streams as AsyncIterables of OpenAI chunks, failures as typed errors.
 */

let gw: LocalGateway;
let openai: FakeServer;
let anthropic: FakeServer;
let core: typeof import('../../functions/gateway/chat-core');
let ChatStreamError: typeof import('../../functions/gateway/chat-stream').ChatStreamError;
let newRequestContext: typeof import('../../functions/shared/telemetry/context').newRequestContext;

beforeAll(async () => {
  [openai, anthropic] = await Promise.all([startOpenAIFake(), startAnthropicFake()]);
  gw = await startTestGateway();
  core = await import('../../functions/gateway/chat-core');
  ({ ChatStreamError } = await import('../../functions/gateway/chat-stream'));
  ({ newRequestContext } = await import('../../functions/shared/telemetry/context'));
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all([openai, anthropic].map((f) => f?.close()));
});

const viaOpenAI = (host = `${openai.url}/v1`) => ({ 'x-gateway-provider': 'openai', authorization: 'Bearer sk-test', 'x-gateway-custom-host': host });
const viaAnthropic = () => ({ 'x-gateway-provider': 'anthropic', authorization: 'Bearer sk-ant-test', 'x-gateway-custom-host': `${anthropic.url}/v1` });

function input(headers: Record<string, string>, body: Partial<ChatRequest>): { req: CallerRequest; body: ChatRequest; log: RequestFacts } {
  const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'four words of question' }], ...body } as ChatRequest;
  const req: CallerRequest = {
    method: 'POST',
    path: '/v1/chat/completions',
    headers,
    traceId: 'chat-core-test',
    context: newRequestContext('chat-core-test'),
    auth: { keyId: 'chat-core-test', workspaceId: gw.workspaceId, organisationId: gw.organisationId, role: 'member', scopes: ['gateway'] },
    receivedAt: Date.now(),
  };
  return { req, body: chat, log: { route: 'test', status: 500, stream: false, retries: 0, attempts: [], metadata: {} } };
}

async function streamOf(headers: Record<string, string>, body: Partial<ChatRequest> = {}) {
  const call = input(headers, { ...body, stream: true });
  const outcome = await core.chatCall(call);
  if (outcome.kind !== 'stream') throw new Error(`expected a stream, got ${outcome.kind}`);
  return { stream: outcome.stream, log: call.log, status: outcome.status };
}

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<{ chunks: ChatCompletionChunk[]; error?: unknown }> {
  const chunks: ChatCompletionChunk[] = [];
  try {
    for await (const chunk of stream) chunks.push(chunk);
    return { chunks };
  } catch (error) {
    return { chunks, error };
  }
}

const textOf = (chunks: ChatCompletionChunk[]) => chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');

describe('chatCall', () => {
  it('returns a non-streamed completion as an object, its facts merged into the log', async () => {
    const call = input(viaOpenAI(), {});
    const outcome = await core.chatCall(call);
    expect(outcome.kind).toBe('completion');
    if (outcome.kind !== 'completion') return;
    expect(outcome.status).toBe(200);
    expect(outcome.completion.object).toBe('chat.completion');
    expect(outcome.completion.choices[0]!.message.content).toBe('echo: four words of question');
    expect(outcome.headers['x-gateway-provider']).toBe('openai');
    expect(call.log).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini', retries: 0, stream: false, usage: { completion_tokens: 5 } });
    expect(call.log.attempts).toHaveLength(1);
  });

  it('iterates an OpenAI-shaped stream as parsed chunks', async () => {
    const { stream, log } = await streamOf(viaOpenAI(), { stream_options: { include_usage: true } });
    const { chunks, error } = await collect(stream);
    expect(error).toBeUndefined();
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(textOf(chunks)).toBe('echo: four words of question');
    expect(chunks.some((c) => c.choices[0]?.finish_reason === 'stop')).toBe(true);
    expect(log.usage?.completion_tokens).toBe(5);
    expect(log.streamError).toBeUndefined();
  });

  it('iterates a translated (Anthropic) stream as OpenAI chunks', async () => {
    const { stream, log } = await streamOf(viaAnthropic(), { model: 'claude-3-5-sonnet-latest', max_tokens: 100 });
    const { chunks, error } = await collect(stream);
    expect(error).toBeUndefined();
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(textOf(chunks)).toBe('echo: four words of question');
    expect(chunks.at(-1)?.choices[0]?.finish_reason ?? chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason).toBe('stop');
    expect(log.provider).toBe('anthropic');
    expect(log.usage?.completion_tokens).toBe(5);
  });

  it('throws a typed error when the provider cuts the stream mid-way, never a clean end', async () => {
    const headers = { ...viaOpenAI(), 'x-fake-cut-after': '2', 'x-gateway-forward-headers': 'x-fake-cut-after' };
    const { stream, log } = await streamOf(headers);
    const { chunks, error } = await collect(stream);
    expect(chunks.length).toBeGreaterThan(0);
    expect(error).toBeInstanceOf(ChatStreamError);
    expect((error as InstanceType<typeof ChatStreamError>).reason).toBe('interrupted');
    // The HTTP client's body failure, as the HTTP route's terminal event says it.
    expect((error as InstanceType<typeof ChatStreamError>).code).toBe('upstream_response_ended');
    expect(log.streamError).toMatch(/ended before it was complete/i);
  });

  it('throws `incomplete` when a translated stream ends cleanly before its answer did', async () => {
    // Anthropic's stream, cut cleanly after the first text delta: no stop reason, no message_stop.
    const frame = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
    const server: Server = createServer((req, res) => {
      req.resume();
      req.on('end', () =>
        res
          .writeHead(200, { 'content-type': 'text/event-stream' })
          .end(
            frame('message_start', { message: { id: 'msg_1', role: 'assistant', content: [], usage: { input_tokens: 3, output_tokens: 0 } } }) +
              frame('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
              frame('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'half an ans' } }),
          ),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const host = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const { stream, log } = await streamOf({ ...viaAnthropic(), 'x-gateway-custom-host': host }, { model: 'claude', max_tokens: 100 });
      const { chunks, error } = await collect(stream);
      expect(textOf(chunks)).toBe('half an ans');
      expect(error).toBeInstanceOf(ChatStreamError);
      expect((error as InstanceType<typeof ChatStreamError>).reason).toBe('incomplete');
      expect((error as InstanceType<typeof ChatStreamError>).code).toBe('upstream_stream_incomplete');
      expect(log.streamError).toMatch(/before the answer was complete/);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('throws a typed error for an in-stream provider error, of a translated stream too', async () => {
    for (const headers of [viaOpenAI(), viaAnthropic()]) {
      const { stream } = await streamOf(
        { ...headers, 'x-fake-stream-error': '1', 'x-gateway-forward-headers': 'x-fake-stream-error' },
        { model: 'model-x', max_tokens: 100 },
      );
      const { error } = await collect(stream);
      expect(error).toBeInstanceOf(ChatStreamError);
      expect((error as InstanceType<typeof ChatStreamError>).reason).toBe('provider_error');
    }
  });

  it("throws a typed timeout error when the caller's x-gateway-request-timeout runs out mid-stream", async () => {
    const headers = {
      ...viaOpenAI(),
      'x-gateway-request-timeout': '1000',
      'x-fake-chunk-delay-ms': '60000',
      'x-gateway-forward-headers': 'x-fake-chunk-delay-ms',
    };
    const { stream, log } = await streamOf(headers);
    const { error } = await collect(stream);
    expect(error).toBeInstanceOf(ChatStreamError);
    expect((error as InstanceType<typeof ChatStreamError>).reason).toBe('timeout');
    expect(log.streamError).toMatch(/timed out/);
  });

  it('destroys the upstream when the consumer stops iterating early', async () => {
    // A provider that streams until its caller goes away, and tells when that happened.
    let upstreamClosed!: () => void;
    const closed = new Promise<void>((resolve) => (upstreamClosed = resolve));
    const server: Server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let n = 0;
      const frame = () =>
        res.write(
          `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: `w${n++} ` }, finish_reason: null }] })}\n\n`,
        );
      frame();
      const timer = setInterval(frame, 20);
      res.on('close', () => {
        clearInterval(timer);
        upstreamClosed();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { stream, log } = await streamOf(viaOpenAI(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`));
      const seen: string[] = [];
      for await (const chunk of stream) {
        seen.push(chunk.choices[0]?.delta.content ?? '');
        if (seen.length === 2) break;
      }
      await closed;
      expect(seen).toEqual(['w0 ', 'w1 ']);
      expect(log.streamError).toBe('client disconnected');
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('returns a provider refusal as a failure with the upstream answer unread', async () => {
    const call = input({ ...viaOpenAI(), 'x-fake-status': '503', 'x-gateway-forward-headers': 'x-fake-status' }, {});
    const outcome = await core.chatCall(call);
    expect(outcome.kind).toBe('failure');
    if (outcome.kind !== 'failure') return;
    expect(outcome.status).toBe(503);
    expect(outcome.upstream?.status).toBe(503);
    outcome.upstream?.body.destroy();
  });

  it('is consumed once', async () => {
    const { stream } = await streamOf(viaOpenAI());
    await collect(stream);
    expect(() => stream.sse()).toThrow(/once/);
  });
});
