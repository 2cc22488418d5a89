import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startFaultyUpstream, streamBody, type FaultMode, type FaultyUpstream } from '../fakes/faulty-upstream';
import { logsOf, startTestGateway } from '../support/gateway';
import { parseEvents, startHugeLineUpstream, startScripted, watchRss, writeFiller, type SseEvent } from '../support/stream-faults';

// The streamed rows of the fault matrix (issue «Hold under faults»): chat, Responses and
// Messages (translated through the chat core) and the generic proxy, each driven through a
// misbehaving OpenAI-shaped upstream. Every row asserts what the caller gets (status, or the
// dialect's terminal error event), how soon, that the upstream connection was closed, and
// that the gateway still answers.

const IDLE_MS = 1500;
let gw: LocalGateway;
let fake: FaultyUpstream;

beforeAll(async () => {
  fake = await startFaultyUpstream();
  gw = await startTestGateway({ env: { UPSTREAM_IDLE_TIMEOUT_MS: String(IDLE_MS) } });
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});
beforeEach(() => fake.reset());

type Dialect = 'chat' | 'responses' | 'messages' | 'proxy';
const DIALECTS: Dialect[] = ['chat', 'responses', 'messages', 'proxy'];
const TRANSLATED: Dialect[] = ['chat', 'responses', 'messages'];

const ROUTES: Record<Dialect, { path: string; provider: string; body: (model: string) => unknown }> = {
  chat: { path: '/v1/chat/completions', provider: 'openai', body: (model) => ({ model, stream: true, messages: [{ role: 'user', content: 'hi' }] }) },
  // vLLM is OpenAI-shaped but has no Responses API of its own: the gateway translates.
  responses: { path: '/v1/responses', provider: 'vllm', body: (model) => ({ model, stream: true, input: 'hi' }) },
  messages: { path: '/v1/messages', provider: 'vllm', body: (model) => ({ model, stream: true, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }) },
  proxy: { path: '/v1/completions', provider: 'openai', body: (model) => ({ model, stream: true, prompt: 'hi' }) },
};

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  events: SseEvent[];
  /** Milliseconds from sending to the end of the body. */
  ms: number;
  /** Milliseconds from sending to the first body bytes (undefined: none). */
  firstByteMs?: number;
}

async function send(
  dialect: Dialect,
  model: string,
  opts: { headers?: Record<string, string>; host?: string; abortAfterFirstByte?: boolean; abortAfterMs?: number; config?: unknown } = {},
): Promise<Answer> {
  const route = ROUTES[dialect];
  const started = Date.now();
  const controller = new AbortController();
  const timer = opts.abortAfterMs !== undefined ? setTimeout(() => controller.abort(), opts.abortAfterMs) : undefined;
  try {
    const res = await fetch(gw.url + route.path, {
      method: 'POST',
      signal: controller.signal,
      headers: {
        'content-type': 'application/json',
        'x-gateway-api-key': gw.adminKey,
        ...(opts.config
          ? { 'x-gateway-config': JSON.stringify(opts.config) }
          : { 'x-gateway-provider': route.provider, 'x-gateway-custom-host': `${opts.host ?? fake.url}/v1`, authorization: 'Bearer sk-fault' }),
        ...opts.headers,
      },
      body: JSON.stringify(route.body(model)),
    });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    let firstByteMs: number | undefined;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      firstByteMs ??= Date.now() - started;
      text += decoder.decode(value, { stream: true });
      if (opts.abortAfterFirstByte) {
        controller.abort();
        break;
      }
    }
    return { status: res.status, headers: res.headers, text, events: parseEvents(text), ms: Date.now() - started, firstByteMs };
  } catch (err) {
    if (controller.signal.aborted) return { status: 0, headers: new Headers(), text: '', events: [], ms: Date.now() - started };
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** The JSON body of an error answer (Messages answers in Anthropic's shape). */
function errorCode(dialect: Dialect, a: Answer): string | undefined {
  const body = JSON.parse(a.text) as { error: { code?: string; type: string } };
  return dialect === 'messages' ? body.error.type : body.error.code;
}

/** What the last event says: a clean end, or the terminal error in the dialect's shape. */
function ending(dialect: Dialect, a: Answer): { complete: boolean; code?: string } {
  const last = a.events.at(-1);
  if (!last) return { complete: false };
  switch (dialect) {
    case 'chat':
    case 'proxy': {
      if (last.data === '[DONE]') return { complete: true };
      const body = JSON.parse(last.data) as { error?: { code?: string } };
      return { complete: false, code: body.error?.code };
    }
    case 'responses': {
      const body = JSON.parse(last.data) as { type: string; response?: { error?: { code?: string } } };
      return { complete: body.type === 'response.completed', code: body.response?.error?.code };
    }
    case 'messages': {
      const body = JSON.parse(last.data) as { type: string; error?: { type: string; message: string } };
      expect(a.events.some((e) => e.event === 'message_stop')).toBe(body.type === 'message_stop');
      return { complete: body.type === 'message_stop', code: body.error?.type };
    }
  }
}

/** Messages errors carry Anthropic's error type, not the gateway's code. */
const MESSAGES_TYPE: Record<string, string> = {
  request_timeout: 'timeout_error',
  upstream_idle_timeout: 'timeout_error',
};
const expectedCode = (dialect: Dialect, code: string) => (dialect === 'messages' ? (MESSAGES_TYPE[code] ?? 'api_error') : code);

async function lastRequestClosed(withinMs = 3000): Promise<void> {
  const request = fake.requests.at(-1);
  expect(request, 'the upstream got the request').toBeDefined();
  await fake.connectionClosedWithin(request!, withinMs);
}

async function stillAnswers(dialect: Dialect): Promise<void> {
  const a = await send(dialect, 'fault-ok');
  expect(a.status).toBe(200);
  expect(ending(dialect, a).complete).toBe(true);
}

describe.each(DIALECTS)('%s, streamed', (dialect) => {
  it('ok: a whole stream ends cleanly', async () => {
    const a = await send(dialect, 'fault-ok');
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toContain('text/event-stream');
    expect(ending(dialect, a)).toEqual({ complete: true });
  });

  it('refused connection: 502 at once', async () => {
    const a = await send(dialect, 'fault-ok', { host: fake.refusedUrl });
    expect(a.status).toBe(502);
    expect(errorCode(dialect, a)).toBe(expectedCode(dialect, 'upstream_unreachable'));
    expect(a.ms).toBeLessThan(3000);
    await stillAnswers(dialect);
  });

  it('reset before headers: 502, the request sent once', async () => {
    const a = await send(dialect, 'fault-reset-before-headers');
    expect(a.status).toBe(502);
    expect(fake.requests).toHaveLength(1);
    await lastRequestClosed();
    await stillAnswers(dialect);
  });

  it('reset mid-body: the events so far, then the terminal error event', async () => {
    const a = await send(dialect, 'fault-reset-mid-body');
    expect(a.status).toBe(200);
    expect(ending(dialect, a)).toEqual({ complete: false, code: expectedCode(dialect, 'upstream_response_ended') });
    await lastRequestClosed();
    await stillAnswers(dialect);
  });

  it.each([
    ['status-500', 500],
    ['status-429', 429],
  ] as const)('%s: the provider status passes through', async (mode, status) => {
    const a = await send(dialect, `fault-${mode}`);
    expect(a.status).toBe(status);
    if (status === 429) expect(a.headers.get('retry-after')).toBe('1');
    await stillAnswers(dialect);
  });

  it('headers never sent: 408 when the request timeout elapses', async () => {
    const a = await send(dialect, 'fault-no-headers', { headers: { 'x-gateway-request-timeout': '1000' } });
    expect(a.status).toBe(408);
    expect(errorCode(dialect, a)).toBe(expectedCode(dialect, 'request_timeout'));
    expect(a.ms).toBeGreaterThanOrEqual(900);
    expect(a.ms).toBeLessThan(4000);
    await lastRequestClosed();
    await stillAnswers(dialect);
  });

  // The proxy passes the provider's status on as soon as it has it; the others wait for the first event.
  const stalled = (a: Answer, status: number, code: string) => {
    if (dialect === 'proxy') {
      expect(a.status).toBe(200);
      expect(ending(dialect, a)).toEqual({ complete: false, code });
    } else {
      expect(a.status).toBe(status);
      expect(errorCode(dialect, a)).toBe(expectedCode(dialect, code));
    }
  };

  it('stall after headers, with a timeout: 408 (the proxy: the terminal error event)', async () => {
    const a = await send(dialect, 'fault-stall-after-headers', { headers: { 'x-gateway-request-timeout': '1000' } });
    stalled(a, 408, 'request_timeout');
    expect(a.ms).toBeLessThan(4000);
    await lastRequestClosed();
    await stillAnswers(dialect);
  });

  it('stall after headers, no timeout: the idle bound answers 504 (the proxy: the terminal error event)', async () => {
    const a = await send(dialect, 'fault-stall-after-headers');
    stalled(a, 504, 'upstream_idle_timeout');
    expect(a.ms).toBeGreaterThanOrEqual(IDLE_MS - 100);
    expect(a.ms).toBeLessThan(IDLE_MS + 4000);
    await lastRequestClosed();
    await stillAnswers(dialect);
  });

  it('1 byte a second, timeout 2 s: 408 before the first event (the proxy: the terminal error event)', async () => {
    fake.configure({ dripIntervalMs: 1000 });
    const a = await send(dialect, 'fault-drip', { headers: { 'x-gateway-request-timeout': '2000' } });
    stalled(a, 408, 'request_timeout');
    expect(a.ms).toBeGreaterThanOrEqual(1900);
    expect(a.ms).toBeLessThan(6000);
    await lastRequestClosed();
    await stillAnswers(dialect);
  });

  it('the first event, then 1 byte every 100 ms, timeout 2 s: the first event, then the timeout as the terminal event', async () => {
    const [first, ...rest] = streamBody('drip').split(/(?<=\n\n)/);
    const tail = Buffer.from(rest.join(''));
    const upstream = await startScripted(async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' }).write(first);
      for (let i = 0; i < tail.length && !res.destroyed; i++) {
        await new Promise((r) => setTimeout(r, 100));
        res.write(tail.subarray(i, i + 1));
      }
      res.end();
    });
    try {
      const a = await send(dialect, 'drip', { host: upstream.url, headers: { 'x-gateway-request-timeout': '2000' } });
      expect(a.status).toBe(200);
      expect(a.firstByteMs).toBeLessThan(1900);
      expect(ending(dialect, a)).toEqual({ complete: false, code: expectedCode(dialect, 'request_timeout') });
      expect(a.ms).toBeGreaterThanOrEqual(1900);
      expect(a.ms).toBeLessThan(6000);
      const deadline = Date.now() + 3000;
      while (upstream.open() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(upstream.open()).toBe(0);
    } finally {
      await upstream.close();
    }
  });

  it('gzip-encoded stream: decoded and relayed whole', async () => {
    const a = await send(dialect, 'fault-gzip');
    expect(a.status).toBe(200);
    expect(ending(dialect, a).complete).toBe(true);
  });

  it('caller leaves after the first bytes: the upstream connection is closed within 1 s (3 s bound)', async () => {
    fake.configure({ dripIntervalMs: 5 });
    const a = await send(dialect, 'fault-drip', { abortAfterFirstByte: true });
    expect(a.status).toBe(200);
    const left = Date.now();
    await lastRequestClosed(3000);
    expect(Date.now() - left).toBeLessThan(3000);
    expect(fake.requests.at(-1)!.completed).toBe(false);
    await stillAnswers(dialect);
  });
  it('caller leaves before the headers: the upstream connection is closed (3 s bound)', async () => {
    const a = await send(dialect, 'fault-no-headers', { abortAfterMs: 500 });
    expect(a.status).toBe(0);
    const left = Date.now();
    await lastRequestClosed(3000);
    expect(Date.now() - left).toBeLessThan(3000);
    await stillAnswers(dialect);
  });
});

describe.each(TRANSLATED)('%s, streamed: bodies that are not a stream, and streams that are not whole', (dialect) => {
  it.each(['invalid-json', 'html', 'not-sse'] as const)('%s: 502 invalid_upstream_response, not an empty 200', async (mode: FaultMode) => {
    const a = await send(dialect, `fault-${mode}`);
    expect(a.status).toBe(502);
    expect(errorCode(dialect, a)).toBe(expectedCode(dialect, 'invalid_upstream_response'));
    expect(a.headers.get('x-gateway-provider')).toBe(ROUTES[dialect].provider);
    await lastRequestClosed();
    await stillAnswers(dialect);
  });

  it('a 100 MB JSON body: 502 at once, the upstream closed, nothing buffered', async () => {
    const peak = watchRss();
    const a = await send(dialect, 'fault-huge-body');
    expect(a.status).toBe(502);
    expect(errorCode(dialect, a)).toBe(expectedCode(dialect, 'invalid_upstream_response'));
    expect(a.ms).toBeLessThan(3000);
    await lastRequestClosed();
    expect(peak.stop()).toBeLessThan(100 * 1024 * 1024);
    await stillAnswers(dialect);
  });

  it('no [DONE] and no finish reason: the terminal error event, never a clean end; the log records it', async () => {
    const traceId = `no-done-${dialect}-${Date.now()}`;
    const a = await send(dialect, 'fault-no-done', { headers: { 'x-gateway-trace-id': traceId } });
    expect(a.status).toBe(200);
    expect(ending(dialect, a)).toEqual({ complete: false, code: expectedCode(dialect, 'upstream_stream_incomplete') });
    const logs = await logsOf(gw, `trace_id=${traceId}`);
    expect(logs.body.data[0]).toMatchObject({ status: 200, stream: true, error: expect.stringContaining('before the answer was complete') });
    await stillAnswers(dialect);
  });
});

describe('an SSE line of 600 MiB', () => {
  const LINE = 600 * 1024 * 1024;

  it.each(TRANSLATED)('%s: as the first line, 502 upstream_event_too_large before anything is sent', async (dialect) => {
    const peak = watchRss();
    const a = await send(dialect, 'fault-huge-sse-line');
    expect(a.status).toBe(502);
    expect(errorCode(dialect, a)).toBe(expectedCode(dialect, 'upstream_event_too_large'));
    await lastRequestClosed(5000);
    expect(peak.stop()).toBeLessThan(200 * 1024 * 1024);
    expect(a.ms).toBeLessThan(15_000);
    await stillAnswers(dialect);
  });

  it.each(DIALECTS)('%s: after the first event, the terminal error event; the line is never buffered', async (dialect) => {
    const upstream = await startHugeLineUpstream(LINE);
    try {
      const peak = watchRss();
      const a = await send(dialect, 'huge', { host: upstream.url });
      expect(a.status).toBe(200);
      expect(ending(dialect, a)).toEqual({ complete: false, code: expectedCode(dialect, 'upstream_event_too_large') });
      expect(peak.stop()).toBeLessThan(200 * 1024 * 1024);
      // The upstream was closed long before it could send the whole line.
      const deadline = Date.now() + 3000;
      while (upstream.open() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(upstream.open()).toBe(0);
      expect(upstream.sent()).toBeLessThan(LINE / 4);
      await stillAnswers(dialect);
    } finally {
      await upstream.close();
    }
  });
});

const anthropicFrame = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const ANTHROPIC_START =
  anthropicFrame('message_start', {
    message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude', content: [], stop_reason: null, usage: { input_tokens: 3, output_tokens: 0 } },
  }) +
  anthropicFrame('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
  anthropicFrame('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'ok' } });
const ANTHROPIC_END =
  anthropicFrame('content_block_stop', { index: 0 }) +
  anthropicFrame('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 1 } }) +
  anthropicFrame('message_stop', {});

describe('messages passed through to Anthropic, streamed', () => {
  async function native(script: (res: ServerResponse) => Promise<void> | void): Promise<{ a: Answer; open(): number; close(): Promise<void> }> {
    const upstream = await startScripted(script);
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gateway-api-key': gw.adminKey,
        'x-gateway-provider': 'anthropic',
        'x-gateway-custom-host': `${upstream.url}/v1`,
        'x-api-key': 'sk-ant-fault',
        'anthropic-version': '2023-06-01',
      },
      body: JSON.stringify({ model: 'claude', stream: true, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.text();
    return { a: { status: res.status, headers: res.headers, text, events: parseEvents(text), ms: 0 }, open: upstream.open, close: upstream.close };
  }
  const sse = { 'content-type': 'text/event-stream' };

  it('a whole stream ends with message_stop', async () => {
    const { a, close } = await native((res) => void res.writeHead(200, sse).end(ANTHROPIC_START + ANTHROPIC_END));
    await close();
    expect(a.status).toBe(200);
    expect(ending('messages', a)).toEqual({ complete: true });
  });

  it('ended cleanly without message_stop: the terminal error event', async () => {
    const { a, close } = await native((res) => void res.writeHead(200, sse).end(ANTHROPIC_START));
    await close();
    expect(a.status).toBe(200);
    expect(ending('messages', a)).toEqual({ complete: false, code: 'api_error' });
    expect(a.events.at(-1)!.data).toContain('ended before the answer was complete');
  });

  it('cut mid-stream: the whole events, then the terminal error event', async () => {
    const { a, close } = await native((res) => {
      res.writeHead(200, sse).write(`${ANTHROPIC_START}event: content_block_delta\ndata: {"type":"content_blo`);
      setTimeout(() => res.socket?.resetAndDestroy(), 50);
    });
    await close();
    expect(a.status).toBe(200);
    expect(a.events.filter((e) => e.event === 'content_block_delta')).toHaveLength(1);
    expect(ending('messages', a)).toEqual({ complete: false, code: 'api_error' });
  });

  it('a 600 MiB line after the first events: the terminal error event; the line is never buffered', async () => {
    let sent = 0;
    const peak = watchRss();
    const { a, open, close } = await native(async (res) => {
      res.writeHead(200, sse).write(`${ANTHROPIC_START}event: content_block_delta\ndata: {"padding":"`);
      await writeFiller(res, 600 * 1024 * 1024, (n) => (sent += n));
      res.end('"}\n\n');
    });
    try {
      expect(a.status).toBe(200);
      expect(ending('messages', a)).toEqual({ complete: false, code: 'api_error' });
      expect(a.events.at(-1)!.data).toContain('larger than');
      expect(peak.stop()).toBeLessThan(200 * 1024 * 1024);
      const deadline = Date.now() + 3000;
      while (open() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(open()).toBe(0);
      expect(sent).toBeLessThan(150 * 1024 * 1024);
    } finally {
      await close();
    }
  });
});

describe('a streamed answer that is not SSE fails its attempt: fallback applies', () => {
  it('the first target answers HTML with 200, the second streams: the caller gets the second, whole', async () => {
    const target = (model: string) => ({ provider: 'openai', api_key: 'sk-fault', custom_host: `${fake.url}/v1`, override_params: { model } });
    const config = { strategy: { mode: 'fallback' }, targets: [target('fault-html'), target('fault-ok')] };
    const a = await send('chat', 'm', { config });
    expect(a.status, a.text).toBe(200);
    expect(ending('chat', a)).toEqual({ complete: true });
    expect(a.headers.get('x-gateway-last-used-option-index')).toBe('config.targets[1]');
    expect(fake.requests.map((r) => r.mode)).toEqual(['html', 'ok']);
  });
});
