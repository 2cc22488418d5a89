import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { LocalGateway } from '../../infra/local/server';
import { startAnthropicFake, startOpenAIFake, type FakeServer } from '../fakes';
import { call, errorOf, startTestGateway } from '../support/gateway';

// This file imports no functions/ module statically: the gateway sets the environment
// (log level INFO here, so request lines can be checked) before the handlers load.
let gw: LocalGateway;
let openaiFake: FakeServer;
let anthropicFake: FakeServer;
const PROVIDER_KEY = 'sk-test-provider-secret-0123456789';

beforeAll(async () => {
  [openaiFake, anthropicFake] = await Promise.all([startOpenAIFake(), startAnthropicFake()]);
  gw = await startTestGateway({ env: { POWERTOOLS_LOG_LEVEL: 'INFO' } });
  const created = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'claude', provider: 'anthropic', api_key: 'sk-ant-managed-secret', custom_host: `${anthropicFake.url}/v1` },
  });
  expect(created.status).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all([openaiFake?.close(), anthropicFake?.close()]);
});
beforeEach(() => {
  openaiFake.reset();
  anthropicFake.reset();
});

/** The OpenAI SDK pointed at the gateway: change baseURL, add two headers. */
function openaiClient(extraHeaders: Record<string, string> = {}) {
  return new OpenAI({
    baseURL: gw.baseUrl,
    apiKey: PROVIDER_KEY,
    maxRetries: 0,
    defaultHeaders: {
      'x-gateway-api-key': gw.adminKey,
      'x-gateway-provider': 'openai',
      'x-gateway-custom-host': `${openaiFake.url}/v1`,
      ...extraHeaders,
    },
  });
}

const claudeClient = () =>
  new OpenAI({ baseURL: gw.baseUrl, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@claude' } });

const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
  },
};

describe('unified chat through the OpenAI SDK (OpenAI-compatible provider)', () => {
  it('answers a chat completion and forwards the provider key', async () => {
    const res = await openaiClient().chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello there' }] });
    expect(res.object).toBe('chat.completion');
    expect(res.choices[0]!.message.content).toBe('echo: hello there');
    expect(res.usage?.total_tokens).toBeGreaterThan(0);
    const upstream = openaiFake.last()!;
    expect(upstream.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
    expect(Object.keys(upstream.headers).filter((h) => h.startsWith('x-gateway-'))).toEqual([]);
  });

  it('streams chunks ending with usage when include_usage is set', async () => {
    const stream = await openaiClient().chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'stream me please' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined | null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(chunks).toBeGreaterThan(2);
    expect(text).toBe('echo: stream me please');
    expect(usage?.total_tokens).toBeGreaterThan(0);
  });

  it('computes embeddings (the SDK asks for base64 and decodes it)', async () => {
    const res = await openaiClient().embeddings.create({ model: 'text-embedding-3-small', input: ['a', 'b c'] });
    expect(res.data).toHaveLength(2);
    expect(res.data[0]!.embedding.length).toBeGreaterThan(0);
  });

  it('streams a long answer whole to a caller who reads slowly (backpressure pauses the provider, never cuts it)', async () => {
    // No usage asked for: the gateway asks OpenAI for it and forwards the events itself.
    const { request } = await import('node:http');
    const words = Array.from({ length: 20_000 }, (_, i) => `w${i}`).join(' ');
    const body = JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: words }] });
    const url = new URL(`${gw.baseUrl}/chat/completions`);
    const text = await new Promise<string>((resolve, reject) => {
      const req = request(
        url,
        {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${PROVIDER_KEY}`,
            'x-gateway-api-key': gw.adminKey,
            'x-gateway-provider': 'openai',
            'x-gateway-custom-host': `${openaiFake.url}/v1`,
          },
        },
        (res) => {
          // Read nothing for a while: the gateway's writes fill every buffer on the way.
          res.pause();
          const chunks: Buffer[] = [];
          setTimeout(() => {
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
            res.resume();
          }, 1500);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    const events = text.split('\n\n').filter(Boolean);
    expect(events.at(-1)).toBe('data: [DONE]');
    const content = events
      .slice(0, -1)
      .map((e) => JSON.parse(e.slice('data: '.length)) as { choices: Array<{ delta: { content?: string } }>; usage?: unknown })
      .map((chunk) => {
        expect(chunk.usage ?? null).toBeNull();
        return chunk.choices[0]?.delta.content ?? '';
      })
      .join('');
    expect(content).toBe(`echo: ${words}`);
  }, 30_000);

  it('raises typed SDK errors for provider errors, passed through with their status', async () => {
    const err = await openaiClient()
      .chat.completions.create({ model: 'fail-429', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    const five = await openaiClient()
      .chat.completions.create({ model: 'fail-503', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(five).toBeInstanceOf(OpenAI.InternalServerError);
    expect((five as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
  });

  it('raises typed SDK errors for gateway errors', async () => {
    const bad = await openaiClient()
      .chat.completions.create({ model: 'gpt-4o-mini', messages: [] })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect((bad as InstanceType<typeof OpenAI.APIError>).message).toContain('messages');
    const anon = await openaiClient({ 'x-gateway-api-key': 'gwk_wrong' })
      .chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(anon).toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('a provider body that is not JSON is a 502 naming the provider, for chat and embeddings alike', async () => {
    openaiFake.setBehaviour({ respond: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '<html>gateway timeout</html>' }) });
    for (const [path, body] of [
      ['/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }],
      ['/v1/embeddings', { model: 'text-embedding-3-small', input: 'x' }],
    ] as const) {
      const res = await call(gw, 'POST', path, {
        headers: { authorization: `Bearer ${PROVIDER_KEY}`, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${openaiFake.url}/v1` },
        body,
      });
      expect(res.status, path).toBe(502);
      expect(errorOf(res), path).toMatchObject({ code: 'invalid_upstream_response', message: expect.stringContaining("Provider 'openai'") });
    }
  });

  it('ends a stream cut mid-way with an error event the SDK raises', async () => {
    const stream = await openaiClient({ 'x-fake-cut-after': '2', 'x-gateway-forward-headers': '["x-fake-cut-after"]' }).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'a long answer that will be cut' }],
      stream: true,
    });
    const seen: string[] = [];
    const failure = await (async () => {
      for await (const chunk of stream) seen.push(chunk.choices[0]?.delta.content ?? '');
    })().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    // The HTTP client's body failure, relayed as the terminal event.
    expect((failure as InstanceType<typeof OpenAI.APIError>).code).toBe('upstream_response_ended');
    expect(String((failure as Error).message)).toMatch(/ended before it was complete/i);
    expect(seen.length).toBeGreaterThan(0);
  });

  it('times out with 408 and aborts the upstream call', async () => {
    const res = await call(gw, 'POST', '/v1/chat/completions', {
      headers: {
        'x-gateway-provider': 'openai',
        'x-gateway-custom-host': `${openaiFake.url}/v1`,
        authorization: `Bearer ${PROVIDER_KEY}`,
        'x-gateway-request-timeout': '150',
        'x-fake-latency-ms': '5000',
        'x-gateway-forward-headers': 'x-fake-latency-ms',
      },
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'slow' }] },
    });
    expect(res.status).toBe(408);
    expect(errorOf(res).type).toBe('timeout_error');
  });

  it('x-gateway-request-timeout: any positive integer is accepted (capped to the platform limit); others are a 400', async () => {
    const ask = (timeout: string) =>
      call(gw, 'POST', '/v1/chat/completions', {
        headers: {
          'x-gateway-provider': 'openai',
          'x-gateway-custom-host': `${openaiFake.url}/v1`,
          authorization: `Bearer ${PROVIDER_KEY}`,
          'x-gateway-request-timeout': timeout,
        },
        body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
      });
    for (const timeout of ['900001', '3600000', '99999999999']) expect((await ask(timeout)).status, timeout).toBe(200);
    for (const timeout of ['1.5', '-1', '0', 'soon']) {
      const res = await ask(timeout);
      expect(res.status, timeout).toBe(400);
      expect(errorOf(res).param).toBe('x-gateway-request-timeout');
    }
  });
});

describe('Anthropic translated natively', () => {
  it('chat, with the managed provider credentials sent as x-api-key', async () => {
    const res = await claudeClient().chat.completions.create({
      model: 'claude-sonnet-4-5',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi claude' },
      ],
    });
    expect(res.choices[0]!.message.content).toBe('echo: hi claude');
    expect(res.choices[0]!.finish_reason).toBe('stop');
    const upstream = anthropicFake.last()!;
    expect(upstream.path).toBe('/v1/messages');
    expect(upstream.headers['x-api-key']).toBe('sk-ant-managed-secret');
    expect((upstream.body as any).system).toEqual([{ type: 'text', text: 'Be brief.' }]);
  });

  it('a full tool-call round trip, streamed and not', async () => {
    const client = claudeClient();
    const first = await client.chat.completions.create({
      model: 'claude-sonnet-4-5',
      messages: [{ role: 'user', content: 'what is the weather in Paris' }],
      tools: [weatherTool],
    });
    const call0 = first.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    expect(call0.function.name).toBe('get_weather');
    expect(JSON.parse(call0.function.arguments)).toEqual({ location: 'Paris' });

    const stream = await client.chat.completions.create({
      model: 'claude-sonnet-4-5',
      stream: true,
      tools: [weatherTool],
      messages: [
        { role: 'user', content: 'what is the weather in Paris' },
        { role: 'assistant', content: null, tool_calls: [call0] },
        { role: 'tool', tool_call_id: call0.id, content: 'sunny, 21C' },
      ],
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('tool said: sunny, 21C');
    const sent = anthropicFake.last()!.body as any;
    expect(sent.messages.at(-1).content[0]).toMatchObject({ type: 'tool_result', tool_use_id: call0.id });
  });

  it('streams tool calls as OpenAI tool_call deltas', async () => {
    const stream = claudeClient().chat.completions.stream({
      model: 'claude-sonnet-4-5',
      messages: [{ role: 'user', content: 'weather in Rome?' }],
      tools: [weatherTool],
    });
    const final = await stream.finalChatCompletion();
    const tc = final.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(JSON.parse(tc.function.arguments)).toEqual({ location: 'Rome' });
  });
});

describe('generic proxy', () => {
  const headers = () => ({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${openaiFake.url}/v1`, authorization: `Bearer ${PROVIDER_KEY}` });

  it.each(['GET', 'PUT', 'DELETE', 'POST'])('%s passes path, query, body and status through', async (method) => {
    const body = method === 'GET' ? undefined : { any: 'thing', n: [1, 2] };
    const res = await call(gw, method, '/v1/some/provider/endpoint?x=1&y=two', { headers: { ...headers(), 'x-custom': 'kept' }, body });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ method, path: '/v1/some/provider/endpoint', query: { x: '1', y: 'two' } });
    expect(res.body.headers['x-custom']).toBe('kept');
    expect(res.body.headers['x-gateway-api-key']).toBeUndefined();
    if (body) expect(typeof res.body.body === 'string' ? JSON.parse(res.body.body) : res.body.body).toEqual(body);
    expect(res.headers.get('x-gateway-provider')).toBe('openai');
  });

  it('passes provider errors through unchanged', async () => {
    const res = await call(gw, 'POST', '/v1/chat/completions/x', { headers: { ...headers(), 'x-fake-status': '418' }, body: {} });
    expect(res.status).toBe(418);
    expect(res.body.error).toBeDefined();
  });

  it('blocks a custom host on a private or metadata address', async () => {
    for (const host of ['http://169.254.169.254/latest', 'http://10.1.2.3/v1', 'http://[::ffff:a9fe:a9fe]/']) {
      const res = await call(gw, 'GET', '/v1/models', { headers: { ...headers(), 'x-gateway-custom-host': host } });
      expect(res.status, host).toBe(400);
      expect(errorOf(res).code).toBe('blocked_custom_host');
    }
  });

  it('says what to send when the provider is missing or contradictory', async () => {
    const none = await call(gw, 'GET', '/v1/models');
    expect(none.status).toBe(400);
    expect(errorOf(none).message).toMatch(/x-gateway-provider/);
    const both = await call(gw, 'GET', '/v1/models', { headers: { 'x-gateway-provider': '@a', 'x-gateway-virtual-key': 'b' } });
    expect(both.status).toBe(400);
    const unknown = await call(gw, 'GET', '/v1/models', { headers: { 'x-gateway-provider': 'nope' } });
    expect(errorOf(unknown).message).toMatch(/Unknown provider 'nope'/);
  });
});

/** Record what the process writes to stdout (the log lines), still passing it through. */
function captureStdout(): { writes: string[]; restore(): void } {
  const writes: string[] = [];
  const original = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    writes.push(String(chunk));
    return (original as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stdout.write;
  return { writes, restore: () => void (process.stdout.write = original) };
}

describe('request logs', () => {
  it('records every request with provider, model, status, usage, metadata — and no secrets', async () => {
    const { writes, restore } = captureStdout();
    const traceId = `trace-log-${Date.now()}`;
    try {
      await openaiClient({ 'x-gateway-trace-id': traceId, 'x-gateway-metadata': JSON.stringify({ _user: 'u-42' }) }).chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'log me' }],
      });
      let records: any[] = [];
      for (let i = 0; i < 50 && !records.length; i++) {
        records = (await call(gw, 'GET', `/v1/logs?trace_id=${traceId}`)).body.data;
        if (!records.length) await new Promise((r) => setTimeout(r, 50));
      }
      expect(records).toHaveLength(1);
      const record = records[0];
      expect(record).toMatchObject({
        trace_id: traceId,
        route: 'chat.completions',
        provider: 'openai',
        model: 'gpt-4o-mini',
        status: 200,
        stream: false,
        retry_count: 0,
        metadata: { _user: 'u-42' },
        workspace_id: gw.workspaceId,
      });
      expect(record.usage.total_tokens).toBeGreaterThan(0);
      const one = await call(gw, 'GET', `/v1/logs/${record.id}`);
      expect(one.body.id).toBe(record.id);
      // A busy process writes several requests' lines at once: look at lines, not writes.
      const line = writes
        .join('')
        .split('\n')
        .find((l) => l.includes('"message":"request"') && l.includes(traceId));
      expect(line, 'a structured request line with the trace id').toBeDefined();
      expect(JSON.parse(line!)).toMatchObject({ trace_id: traceId, provider: 'openai', status: 200 });
      const everything = writes.join('') + JSON.stringify(records);
      expect(everything).not.toContain(PROVIDER_KEY);
      expect(everything).not.toContain(gw.adminKey);
      expect(everything).not.toContain('sk-ant-managed-secret');
    } finally {
      restore();
    }
  });

  it('gives each of many concurrent requests its own trace id and workspace on its log line', async () => {
    const { writes, restore } = captureStdout();
    const run = `conc-${Date.now()}`;
    const traces = Array.from({ length: 24 }, (_, i) => `${run}-${i}`);
    try {
      // Interleaved in one process (the local runtime), as many Lambda containers never are.
      await Promise.all(
        traces.map((traceId, i) =>
          openaiClient({ 'x-gateway-trace-id': traceId, 'x-gateway-metadata': JSON.stringify({ n: String(i) }) })
            .chat.completions.create({
              model: 'gpt-4o-mini',
              messages: [{ role: 'user', content: `request ${i}` }],
              stream: i % 2 === 0,
            })
            .then(async (res) => {
              if (Symbol.asyncIterator in res) for await (const _ of res) void _;
            }),
        ),
      );
      let lines: Array<{ trace_id?: string; workspace_id?: string; metadata?: { n?: string } }> = [];
      for (let i = 0; i < 50 && lines.length < traces.length; i++) {
        lines = writes
          .join('')
          .split('\n')
          .filter((l) => l.includes('"message":"request"') && l.includes(run))
          .map((l) => JSON.parse(l));
        if (lines.length < traces.length) await new Promise((r) => setTimeout(r, 50));
      }
      expect(lines).toHaveLength(traces.length);
      for (const line of lines) {
        expect(line.trace_id).toBe(`${run}-${line.metadata?.n}`);
        expect(line.workspace_id).toBe(gw.workspaceId);
      }
    } finally {
      restore();
    }
  });

  it('records requests rejected by validation too', async () => {
    const traceId = `trace-bad-${Date.now()}`;
    await call(gw, 'POST', '/v1/chat/completions', { headers: { 'x-gateway-trace-id': traceId, 'x-gateway-provider': 'openai' }, body: { model: 'x' } });
    let records: any[] = [];
    for (let i = 0; i < 50 && !records.length; i++) {
      records = (await call(gw, 'GET', `/v1/logs?trace_id=${traceId}`)).body.data;
      if (!records.length) await new Promise((r) => setTimeout(r, 50));
    }
    expect(records[0]).toMatchObject({ status: 400, route: 'chat.completions' });
  });
});

describe('client disconnect', () => {
  it('aborts the upstream request when the caller goes away mid-stream', async () => {
    const { createServer } = await import('node:http');
    let upstreamClosedEarly!: () => void;
    const closed = new Promise<void>((r) => (upstreamClosedEarly = r));
    const slow = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (n: number) =>
        `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: `${n} ` }, finish_reason: null }] })}\n\n`;
      let n = 0;
      const timer = setInterval(() => res.write(chunk(n++)), 20);
      res.on('close', () => {
        clearInterval(timer);
        if (!res.writableEnded) upstreamClosedEarly();
      });
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    try {
      const controller = new AbortController();
      const res = await fetch(`${gw.baseUrl}/chat/completions`, {
        method: 'POST',
        signal: controller.signal,
        headers: {
          'content-type': 'application/json',
          'x-gateway-api-key': gw.adminKey,
          'x-gateway-provider': 'openai',
          'x-gateway-custom-host': `http://127.0.0.1:${(slow.address() as { port: number }).port}/v1`,
          authorization: 'Bearer sk-x',
        },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'long' }], stream: true }),
      });
      const reader = res.body!.getReader();
      await reader.read();
      controller.abort();
      // Resolves only if the gateway closed its upstream connection; otherwise the test times out.
      await closed;
    } finally {
      slow.closeAllConnections();
      await new Promise((r) => slow.close(r));
    }
  });
});
