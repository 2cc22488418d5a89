import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { decodeEventStream, embed, fakeSpeechBytes, startAllFakes, TOOL_PREAMBLE, type AllFakes } from '../fakes';

let fakes: AllFakes;
const CREDS = { accessKeyId: 'AKIDFAKE', secretAccessKey: 'fake-secret' };

beforeAll(async () => {
  fakes = await startAllFakes({}, { credentials: CREDS });
});
afterAll(() => fakes.close());
beforeEach(() => fakes.reset());

const WEATHER_TOOL = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } } };

const j = (res: Response): Promise<any> => res.json();

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

function sseEvents(text: string): EventSourceMessage[] {
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => events.push(e) });
  parser.feed(text);
  return events;
}

/** Read a body until it ends or breaks; report what arrived and whether it broke. */
async function readAll(res: Response): Promise<{ text: string; broken: boolean }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, broken: false };
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    return { text, broken: true };
  }
}

describe('openai fake', () => {
  const auth = { authorization: 'Bearer sk-test' };

  it('counts Responses input tokens: the words of the instructions and every input text', async () => {
    const body = {
      model: 'gpt-4o-mini',
      instructions: 'be brief',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'hello there friend' }] },
        { type: 'function_call_output', call_id: 'c', output: 'sunny' },
      ],
    };
    const res = await post(`${fakes.openai.url}/v1/responses/input_tokens`, body, auth);
    expect(await j(res)).toEqual({ object: 'response.input_tokens', input_tokens: 6 });
    expect((await post(`${fakes.openai.url}/v1/responses/input_tokens`, body)).status).toBe(401);
  });

  it('answers chat JSON deterministically with word-count usage', async () => {
    const res = await post(
      `${fakes.openai.url}/v1/chat/completions`,
      {
        model: 'gpt-4o-mini',
        messages: [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: 'hello there' },
        ],
      },
      auth,
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toMatch(/^req_fake_/);
    const body = await j(res);
    expect(body).toMatchObject({
      object: 'chat.completion',
      model: 'gpt-4o-mini',
      choices: [{ index: 0, message: { role: 'assistant', content: 'echo: hello there' }, finish_reason: 'stop', logprobs: null }],
    });
    expect(body.usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 });
    expect(fakes.openai.last()?.model).toBe('gpt-4o-mini');
    expect(fakes.openai.last()?.headers.authorization).toBe('Bearer sk-test');
  });

  it('streams chunks, a usage chunk with choices [] and [DONE]', async () => {
    const res = await post(
      `${fakes.openai.url}/v1/chat/completions`,
      { model: 'm', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'one two' }] },
      auth,
    );
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await res.text();
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    const events = sseEvents(text).map((e) => e.data);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((d) => JSON.parse(d));
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0].choices[0].delta).toMatchObject({ role: 'assistant', content: '' });
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('echo: one two');
    const usageChunk = chunks.at(-1);
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage).toMatchObject({ prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 });
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
  });

  it('streams a tool call, then answers a tool result with its output', async () => {
    const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const res = await post(`${fakes.openai.url}/v1/chat/completions`, { model: 'm', stream: true, tools: [WEATHER_TOOL], messages }, auth);
    const chunks = sseEvents(await res.text())
      .map((e) => e.data)
      .filter((d) => d !== '[DONE]')
      .map((d) => JSON.parse(d));
    const first = chunks[0].choices[0].delta.tool_calls[0];
    expect(first).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather', arguments: '' } });
    expect(first.id).toMatch(/^call_/);
    const args = chunks
      .slice(1)
      .map((c) => c.choices[0].delta.tool_calls?.[0]?.function.arguments ?? '')
      .join('');
    expect(JSON.parse(args)).toEqual({ location: 'Paris' });
    expect(chunks.at(-1).choices[0].finish_reason).toBe('tool_calls');

    const follow = await post(
      `${fakes.openai.url}/v1/chat/completions`,
      {
        model: 'm',
        tools: [WEATHER_TOOL],
        messages: [
          ...messages,
          { role: 'assistant', content: null, tool_calls: [{ id: first.id, type: 'function', function: { name: 'get_weather', arguments: args } }] },
          { role: 'tool', tool_call_id: first.id, content: '18C and sunny' },
        ],
      },
      auth,
    );
    expect((await j(follow)).choices[0].message.content).toBe('tool said: 18C and sunny');
  });

  it('works with the official openai SDK (chat, stream, embeddings)', async () => {
    const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${fakes.openai.url}/v1`, maxRetries: 0 });
    const done = await client.chat.completions.create({ model: 'fake-tools', messages: [{ role: 'user', content: 'go' }], tools: [WEATHER_TOOL as never] });
    expect(done.choices[0]!.message.tool_calls?.[0]).toMatchObject({ type: 'function', function: { name: 'get_weather' } });
    const stream = await client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'a b c' }] });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: a b c');
    const emb = await client.embeddings.create({ model: 'text-embedding-3-small', input: ['x', 'y z'] });
    expect(emb.data[1]!.embedding[0]).toBeCloseTo(embed('y z')[0]!, 5);
    expect(emb.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
    expect(fakes.openai.requests.find((r) => r.path === '/v1/embeddings')?.body).toMatchObject({ encoding_format: 'base64' });
  });

  it('serves speech as chunked bytes and transcriptions from multipart', async () => {
    const speech = await post(`${fakes.openai.url}/v1/audio/speech`, { model: 'tts-1', input: 'hi', voice: 'alloy' }, auth);
    expect(speech.headers.get('content-type')).toBe('audio/mpeg');
    expect(speech.headers.get('transfer-encoding')).toBe('chunked');
    expect(Buffer.from(await speech.arrayBuffer()).equals(fakeSpeechBytes('hi', 'alloy'))).toBe(true);

    const form = new FormData();
    form.append('model', 'whisper-1');
    form.append('file', new Blob(['hello audio'], { type: 'audio/wav' }), 'a.wav');
    const tr = await fetch(`${fakes.openai.url}/v1/audio/transcriptions`, { method: 'POST', headers: auth, body: form });
    expect(await j(tr)).toMatchObject({ text: 'transcript: hello audio' });
    const rec = fakes.openai.last()!;
    expect(rec.model).toBe('whisper-1');
    expect(rec.form?.files[0]).toMatchObject({ name: 'file', filename: 'a.wav', contentType: 'audio/wav' });
  });

  it('echoes any other path and lists models', async () => {
    const res = await fetch(`${fakes.openai.url}/v1/files/file-1?x=1`, {
      method: 'PUT',
      headers: { 'x-custom': 'v', 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(await j(res)).toMatchObject({ method: 'PUT', path: '/v1/files/file-1', query: { x: '1' }, headers: { 'x-custom': 'v' }, body: { a: 1 } });
    const models = await j(await fetch(`${fakes.openai.url}/v1/models`, { headers: auth }));
    expect(models.object).toBe('list');
  });

  it('rejects missing auth with the OpenAI error shape', async () => {
    const res = await post(`${fakes.openai.url}/v1/chat/completions`, { model: 'm', messages: [] });
    expect(res.status).toBe(401);
    expect((await j(res)).error).toMatchObject({ type: 'invalid_request_error', param: null, code: 'invalid_api_key' });
  });
});

describe('common behaviours', () => {
  const auth = { authorization: 'Bearer sk' };
  const chat = (model: string, headers: Record<string, string> = {}, stream = false) =>
    post(`${fakes.openai.url}/v1/chat/completions`, { model, stream, messages: [{ role: 'user', content: 'one two three four' }] }, { ...auth, ...headers });

  it('injects errors by model name or header, with retry-after', async () => {
    const r1 = await chat('fail-429', { 'x-fake-retry-after': '1' });
    expect(r1.status).toBe(429);
    expect(r1.headers.get('retry-after')).toBe('1');
    expect((await j(r1)).error.code).toBe('rate_limit_exceeded');
    const r2 = await chat('m', { 'x-fake-status': '503' });
    expect(r2.status).toBe(503);
    const r3 = await post(
      `${fakes.anthropic.url}/v1/messages`,
      { model: 'fail-529', max_tokens: 10, messages: [] },
      { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
    );
    expect(r3.status).toBe(529);
    expect(await j(r3)).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
    expect(fakes.openai.count('/chat/completions')).toBe(2);
  });

  it('fails the next N requests via setBehaviour, and custom replies', async () => {
    fakes.openai.setBehaviour({ status: 500, times: 1 });
    expect((await chat('m')).status).toBe(500);
    expect((await chat('m')).status).toBe(200);
    fakes.openai.setBehaviour({ respond: () => ({ status: 418, body: { teapot: true } }) });
    const r = await chat('m');
    expect(r.status).toBe(418);
    expect(fakes.openai.count()).toBe(3);
  });

  it('cuts a stream after N frames, or a JSON reply at once', async () => {
    const cut = await readAll(await chat('m', { 'x-fake-cut-after': '2' }, true));
    expect(cut.broken).toBe(true);
    expect(sseEvents(cut.text)).toHaveLength(2);
    const byModel = await readAll(await chat('cut-stream', {}, true));
    expect(byModel.broken).toBe(true);
    expect(byModel.text).not.toContain('[DONE]');
    await expect(chat('m', { 'x-fake-cut-after': '0' })).rejects.toThrow();
  });

  it('sends in-stream errors in the provider format', async () => {
    const text = await (await chat('m', { 'x-fake-stream-error': '1', 'x-fake-cut-after': '1' }, true)).text();
    const events = sseEvents(text);
    expect(events).toHaveLength(2);
    expect(JSON.parse(events[1]!.data).error).toMatchObject({ type: 'server_error', message: 'Injected stream error' });
  });

  it('applies latency and chunk delays', async () => {
    const t0 = Date.now();
    await j(await chat('m', { 'x-fake-latency-ms': '120' }));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(110);
    const t1 = Date.now();
    await (await chat('m', { 'x-fake-chunk-delay-ms': '20' }, true)).text();
    expect(Date.now() - t1).toBeGreaterThanOrEqual(100);
  });
});

describe('anthropic fake', () => {
  const headers = { 'x-api-key': 'sk-ant', 'anthropic-version': '2023-06-01' };
  const url = () => `${fakes.anthropic.url}/v1/messages`;

  it('checks auth headers and request rules', async () => {
    const noKey = await post(url(), { model: 'c', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }, { 'anthropic-version': '2023-06-01' });
    expect(noKey.status).toBe(401);
    expect(await j(noKey)).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const noMax = await post(url(), { model: 'c', messages: [{ role: 'user', content: 'x' }] }, headers);
    expect(noMax.status).toBe(400);
    const system = await post(url(), { model: 'c', max_tokens: 5, messages: [{ role: 'system', content: 'x' }] }, headers);
    expect((await j(system)).error.type).toBe('invalid_request_error');
    const extra = await post(url(), { model: 'c', max_tokens: 5, seed: 1, messages: [{ role: 'user', content: 'x' }] }, headers);
    expect(extra.status).toBe(400);
    expect((await j(extra)).error.message).toBe('seed: Extra inputs are not permitted');
  });

  it('answers JSON with tool_use after a text block, and tool_result', async () => {
    const tools = [{ name: 'get_weather', input_schema: { type: 'object' } }];
    const res = await post(url(), { model: 'claude', max_tokens: 100, tools, messages: [{ role: 'user', content: 'weather in Rome?' }] }, headers);
    const body = await j(res);
    expect(body).toMatchObject({
      type: 'message',
      role: 'assistant',
      stop_reason: 'tool_use',
      content: [
        { type: 'text', text: TOOL_PREAMBLE },
        { type: 'tool_use', name: 'get_weather', input: { location: 'Rome' } },
      ],
    });
    const id = body.content[1].id;
    const next = await post(
      url(),
      {
        model: 'claude',
        max_tokens: 100,
        tools,
        messages: [
          { role: 'user', content: 'weather in Rome?' },
          { role: 'assistant', content: body.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: 'warm' }] },
        ],
      },
      headers,
    );
    expect((await j(next)).content[0].text).toBe('tool said: warm');
  });

  it('streams event:/data: pairs in order, ending with message_stop', async () => {
    const res = await post(
      url(),
      {
        model: 'claude',
        max_tokens: 100,
        stream: true,
        tools: [{ name: 'get_weather', input_schema: { type: 'object' } }],
        messages: [{ role: 'user', content: 'weather?' }],
      },
      headers,
    );
    const events = sseEvents(await res.text());
    for (const e of events) expect(JSON.parse(e.data).type).toBe(e.event);
    const names = events.map((e) => e.event);
    expect(names.slice(0, 3)).toEqual(['message_start', 'content_block_start', 'ping']);
    expect(names.slice(-2)).toEqual(['message_delta', 'message_stop']);
    const data = events.map((e) => JSON.parse(e.data));
    const json = data
      .filter((d) => d.delta?.type === 'input_json_delta')
      .map((d) => d.delta.partial_json)
      .join('');
    expect(JSON.parse(json)).toEqual({ location: 'Boston, MA' });
    expect(data.at(-2)).toMatchObject({ delta: { stop_reason: 'tool_use' }, usage: { output_tokens: expect.any(Number) } });
  });

  it('sends event: error mid-stream', async () => {
    const res = await post(url(), { model: 'stream-error', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi there you' }] }, headers);
    const events = sseEvents(await res.text());
    expect(events.at(-1)).toMatchObject({ event: 'error' });
    expect(JSON.parse(events.at(-1)!.data).error.type).toBe('overloaded_error');
  });
});

describe('gemini fake', () => {
  const body = { contents: [{ role: 'user', parts: [{ text: 'hello gemini' }] }] };

  it('serves the Developer API with an API key (header or query)', async () => {
    const res = await post(`${fakes.gemini.url}/v1beta/models/gemini-2.0-flash:generateContent`, body, { 'x-goog-api-key': 'k' });
    const answer = await j(res);
    expect(answer).toMatchObject({
      candidates: [{ content: { role: 'model', parts: [{ text: 'echo: hello gemini' }] }, finishReason: 'STOP' }],
      usageMetadata: { promptTokenCount: 2, candidatesTokenCount: 3, totalTokenCount: 5 },
    });
    // Like the real API, index 0 is a default value and left out.
    expect(answer.candidates[0]).not.toHaveProperty('index');
    expect((await post(`${fakes.gemini.url}/v1beta/models/g:generateContent?key=k`, body)).status).toBe(200);
    const noKey = await post(`${fakes.gemini.url}/v1beta/models/g:generateContent`, body);
    expect(noKey.status).toBe(403);
    expect((await j(noKey)).error.status).toBe('PERMISSION_DENIED');
  });

  it('streams Vertex SSE separated by CRLF CRLF, with a Bearer token', async () => {
    const path = '/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.0-flash:streamGenerateContent?alt=sse';
    expect((await post(`${fakes.gemini.url}${path}`, body)).status).toBe(401);
    const text = await (await post(`${fakes.gemini.url}${path}`, body, { authorization: 'Bearer ya29' })).text();
    expect(text.endsWith('\r\n\r\n')).toBe(true);
    const chunks = sseEvents(text).map((e) => JSON.parse(e.data));
    expect(chunks.map((c) => c.candidates[0].content.parts[0].text).join('')).toBe('echo: hello gemini');
    expect(chunks.at(-1)).toMatchObject({ candidates: [{ finishReason: 'STOP' }], usageMetadata: { candidatesTokenCount: 3 } });
    expect(fakes.gemini.last()?.params).toMatchObject({ project: 'p1', region: 'us-central1', model: 'gemini-2.0-flash', api: 'vertex' });
  });

  it('answers with functionCall parts and embeds', async () => {
    const tools = [{ functionDeclarations: [{ name: 'get_weather' }] }];
    const res = await post(
      `${fakes.gemini.url}/v1beta/models/g:generateContent`,
      { ...body, contents: [{ role: 'user', parts: [{ text: 'weather in Oslo' }] }], tools },
      { 'x-goog-api-key': 'k' },
    );
    expect((await j(res)).candidates[0].content.parts[0]).toEqual({ functionCall: { name: 'get_weather', args: { location: 'Oslo' } } });
    const one = await j(
      await post(`${fakes.gemini.url}/v1beta/models/text-embedding-004:embedContent`, { content: { parts: [{ text: 'a' }] } }, { 'x-goog-api-key': 'k' }),
    );
    expect(one.embedding.values).toEqual(embed('a'));
    const batch = await j(
      await post(
        `${fakes.gemini.url}/v1beta/models/e:batchEmbedContents`,
        { requests: [{ content: { parts: [{ text: 'a' }] } }, { content: { parts: [{ text: 'b' }] } }] },
        { 'x-goog-api-key': 'k' },
      ),
    );
    expect(batch.embeddings).toHaveLength(2);
  });
});

describe('bedrock fake', () => {
  const signer = new SignatureV4({ credentials: CREDS, region: 'us-east-1', service: 'bedrock', sha256: Hash.bind(null, 'sha256') });
  async function signedPost(path: string, body: unknown, extra: Record<string, string> = {}, s = signer) {
    const url = new URL(fakes.bedrock.url + path);
    const text = JSON.stringify(body);
    const req = await s.sign({
      method: 'POST',
      protocol: 'http:',
      hostname: url.hostname,
      port: Number(url.port),
      path,
      headers: { host: url.host, 'content-type': 'application/json', ...extra },
      body: text,
    });
    const { host: _host, ...headers } = req.headers;
    return fetch(url, { method: 'POST', headers, body: text });
  }
  const conv = { messages: [{ role: 'user', content: [{ text: 'hi bedrock' }] }] };

  it('CountTokens: a Converse input counted (words, one per tool); an inference profile refused, as there', async () => {
    const input = { converse: { ...conv, system: [{ text: 'be brief' }], toolConfig: { tools: [{ toolSpec: { name: 't', inputSchema: { json: {} } } }] } } };
    const counted = await signedPost('/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/count-tokens', { input });
    expect(counted.status).toBe(200);
    expect(await j(counted)).toEqual({ inputTokens: 5 });
    const profile = await signedPost('/model/us.anthropic.claude-3-5-sonnet-20240620-v1%3A0/count-tokens', { input });
    expect(profile.status).toBe(400);
    expect(profile.headers.get('x-amzn-errortype')).toMatch(/^ValidationException/);
  });

  it('requires a SigV4 signature and verifies it', async () => {
    const unsigned = await post(`${fakes.bedrock.url}/model/m/converse`, conv);
    expect(unsigned.status).toBe(403);
    expect(unsigned.headers.get('x-amzn-errortype')).toMatch(/^InvalidSignatureException/);
    expect(await j(unsigned)).toEqual({ message: expect.any(String) });
    const wrong = new SignatureV4({
      credentials: { ...CREDS, secretAccessKey: 'nope' },
      region: 'us-east-1',
      service: 'bedrock',
      sha256: Hash.bind(null, 'sha256'),
    });
    expect((await signedPost('/model/m/converse', conv, {}, wrong)).status).toBe(403);
  });

  it('answers Converse and records the decoded modelId', async () => {
    const res = await signedPost('/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.anthropic.claude-3-5%3A0/converse', conv);
    expect(res.status).toBe(200);
    expect(await j(res)).toMatchObject({
      output: { message: { role: 'assistant', content: [{ text: 'echo: hi bedrock' }] } },
      stopReason: 'end_turn',
      usage: { inputTokens: 2, outputTokens: 3, totalTokens: 5 },
      metrics: { latencyMs: 1 },
    });
    expect(fakes.bedrock.last()?.model).toBe('arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-3-5:0');
    const titan = await j(await signedPost('/model/amazon.titan-embed-text-v2%3A0/invoke', { inputText: 'a b' }));
    expect(titan).toEqual({ embedding: embed('a b'), inputTextTokenCount: 2 });
  });

  it('streams event-stream frames that decode with EventStreamCodec', async () => {
    const tools = { toolConfig: { tools: [{ toolSpec: { name: 'get_weather', inputSchema: { json: {} } } }] } };
    const res = await signedPost('/model/anthropic.claude%3A0/converse-stream', {
      messages: [{ role: 'user', content: [{ text: 'weather in Lima' }] }],
      ...tools,
    });
    expect(res.headers.get('content-type')).toBe('application/vnd.amazon.eventstream');
    const events = decodeEventStream(new Uint8Array(await res.arrayBuffer())).map((m) => ({
      type: m.headers[':event-type']?.value,
      kind: m.headers[':message-type']?.value,
      body: m.json as any,
    }));
    expect(events.every((e) => e.kind === 'event' && typeof e.body.p === 'string')).toBe(true);
    expect(events[0]!.type).toBe('messageStart');
    expect(events.at(-2)).toMatchObject({ type: 'messageStop', body: { stopReason: 'tool_use' } });
    expect(events.at(-1)).toMatchObject({ type: 'metadata', body: { usage: { inputTokens: 3 } } });
    expect(events.find((e) => e.type === 'contentBlockStart')?.body.start.toolUse).toMatchObject({ name: 'get_weather' });
    const input = events
      .filter((e) => e.body.delta?.toolUse)
      .map((e) => e.body.delta.toolUse.input)
      .join('');
    expect(JSON.parse(input)).toEqual({ location: 'Lima' });
  });

  it('sends exception frames and reranks', async () => {
    const res = await signedPost('/model/m/converse-stream', conv, { 'x-fake-stream-error': 'throttlingException' });
    const frames = decodeEventStream(new Uint8Array(await res.arrayBuffer()));
    expect(frames).toHaveLength(3);
    const last = frames.at(-1)!;
    expect(last.headers[':message-type']?.value).toBe('exception');
    expect(last.headers[':exception-type']?.value).toBe('throttlingException');

    const rr = await signedPost('/rerank', {
      queries: [{ type: 'TEXT', textQuery: { text: 'red apple' } }],
      sources: ['green pear', 'red apple pie', 'apple'].map((text) => ({ type: 'INLINE', inlineDocumentSource: { type: 'TEXT', textDocument: { text } } })),
      rerankingConfiguration: {
        type: 'BEDROCK_RERANKING_MODEL',
        bedrockRerankingConfiguration: { numberOfResults: 2, modelConfiguration: { modelArn: 'amazon.rerank-v1:0' } },
      },
    });
    const out = await j(rr);
    expect(out.results.map((r: { index: number }) => r.index)).toEqual([1, 2]);
    expect(out.results[0].relevanceScore).toBeGreaterThan(out.results[1].relevanceScore);
  });
});

describe('cohere fake', () => {
  const auth = { authorization: 'Bearer co' };

  it('answers chat JSON and streams the v2 events', async () => {
    const res = await post(`${fakes.cohere.url}/v2/chat`, { model: 'command-r', messages: [{ role: 'user', content: 'hey you' }] }, auth);
    expect(await j(res)).toMatchObject({
      finish_reason: 'COMPLETE',
      message: { role: 'assistant', content: [{ type: 'text', text: 'echo: hey you' }] },
      usage: { tokens: { input_tokens: 2, output_tokens: 3 } },
    });
    const s = await post(
      `${fakes.cohere.url}/v2/chat`,
      { model: 'command-r', stream: true, tools: [WEATHER_TOOL], messages: [{ role: 'user', content: 'weather?' }] },
      auth,
    );
    const events = sseEvents(await s.text());
    const names = [...new Set(events.map((e) => e.event))];
    expect(names).toEqual(['message-start', 'tool-plan-delta', 'tool-call-start', 'tool-call-delta', 'tool-call-end', 'message-end']);
    expect(JSON.parse(events.at(-1)!.data).delta.finish_reason).toBe('TOOL_CALL');
    expect((await post(`${fakes.cohere.url}/v2/chat`, { model: 'c', messages: [] })).status).toBe(401);
  });

  it('embeds and reranks', async () => {
    const e = await j(
      await post(
        `${fakes.cohere.url}/v2/embed`,
        { model: 'embed-v4.0', input_type: 'search_document', texts: ['a'], embedding_types: ['float', 'int8'] },
        auth,
      ),
    );
    expect(e).toMatchObject({ response_type: 'embeddings_by_type', embeddings: { float: [embed('a')] }, meta: { billed_units: { input_tokens: 1 } } });
    expect(e.embeddings.int8[0]).toHaveLength(8);
    const r = await j(await post(`${fakes.cohere.url}/v2/rerank`, { model: 'rerank-v3.5', query: 'cat', documents: ['dog', 'cat'], top_n: 1 }, auth));
    expect(r.results).toEqual([{ index: 1, relevance_score: expect.any(Number) }]);
    expect(r.meta.billed_units.search_units).toBe(1);
  });
});
