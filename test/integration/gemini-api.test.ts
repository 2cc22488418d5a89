import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiError, GoogleGenAI, Type, type Content } from '@google/genai';
import type { LocalGateway } from '../../infra/local/server';
import { startAllFakes, type AllFakes, type FakeServer } from '../fakes';
import { FAKE_AWS, manageFakes } from '../support/managed-fakes';
import { call, startTestGateway } from '../support/gateway';

// The Gemini API (v1beta) on every provider with chat, through the real @google/genai SDK
// pointed at the gateway: the gateway key is the SDK's API key (x-goog-api-key), the
// provider a managed one named in a header the SDK passes on.
let gw: LocalGateway;
let fakes: AllFakes;

beforeAll(async () => {
  fakes = await startAllFakes({}, { credentials: FAKE_AWS });
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0' } });
  await manageFakes(gw, fakes, 'g');
});
afterAll(async () => {
  await gw?.stop();
  await fakes?.close();
});
beforeEach(() => fakes.reset());

const MODELS: Record<string, string> = { 'g-openai': 'gpt-4o-mini', 'g-claude': 'claude-sonnet-4-5' };
const FAKE_OF: Record<string, () => FakeServer> = { 'g-openai': () => fakes.openai, 'g-claude': () => fakes.anthropic };

const genai = (slug: string, headers: Record<string, string> = {}, apiKey = gw.adminKey) =>
  new GoogleGenAI({ apiKey, httpOptions: { baseUrl: gw.url, headers: { 'x-gateway-provider': `@${slug}`, ...headers } } });

/** Every `data:` event of an SSE body. */
function sseEvents(text: string): any[] {
  return text
    .split(/\n\n/)
    .map((e) => e.trim())
    .filter((e) => e.startsWith('data:'))
    .map((e) => JSON.parse(e.slice(5).trim()));
}

async function logsOf(traceId: string): Promise<any[]> {
  let logs: any[] = [];
  for (let i = 0; i < 50 && !logs.length; i++) {
    logs = (await call(gw, 'GET', `/v1/logs?trace_id=${traceId}`)).body.data ?? [];
    if (!logs.length) await new Promise((r) => setTimeout(r, 100));
  }
  return logs;
}

const weatherTool = {
  functionDeclarations: [
    {
      name: 'get_weather',
      description: 'Current weather of a city',
      parameters: { type: Type.OBJECT, properties: { location: { type: Type.STRING } }, required: ['location'] },
    },
  ],
};
const askWeather: Content = { role: 'user', parts: [{ text: 'What is the weather in Paris?' }] };
const PIXEL = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

describe.each(Object.keys(MODELS))('@google/genai on %s', (slug) => {
  const model = () => MODELS[slug]!;
  const fake = () => FAKE_OF[slug]!();

  it('generateContent answers text with a system instruction, usage metadata and the model version', async () => {
    const res = await genai(slug).models.generateContent({ model: model(), contents: 'Say hi', config: { systemInstruction: 'Be brief.' } });
    expect(res.text).toBe('echo: Say hi');
    expect(res.candidates?.[0]?.finishReason).toBe('STOP');
    expect(res.modelVersion).toBe(model());
    expect(res.responseId).toBeTruthy();
    const usage = res.usageMetadata!;
    expect(usage.promptTokenCount).toBeGreaterThan(0);
    expect(usage.candidatesTokenCount).toBeGreaterThan(0);
    expect(usage.totalTokenCount).toBe(usage.promptTokenCount! + usage.candidatesTokenCount!);
    expect(fake().count()).toBe(1);
    expect(JSON.stringify(fake().last()!.body)).toContain('Be brief.');
    // The gateway key never leaves the gateway.
    expect(JSON.stringify(fake().last()!.headers)).not.toContain(gw.adminKey);
  });

  it('generateContentStream streams text; the last chunk carries finishReason and usage', async () => {
    const stream = await genai(slug).models.generateContentStream({ model: model(), contents: 'Say hello there' });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.map((c) => c.text ?? '').join('')).toBe('echo: Say hello there');
    const last = chunks.at(-1)!;
    expect(last.candidates?.[0]?.finishReason).toBe('STOP');
    expect(last.usageMetadata?.candidatesTokenCount).toBeGreaterThan(0);
  });

  it('a chat session keeps a streamed answer as one assistant turn of its history', async () => {
    const chat = genai(slug).chats.create({ model: model() });
    let first = '';
    for await (const chunk of await chat.sendMessageStream({ message: 'Say one two three' })) first += chunk.text ?? '';
    expect(first).toBe('echo: Say one two three');
    const second = await chat.sendMessage({ message: 'And again' });
    expect(second.text).toBe('echo: And again');
    const messages = (fake().last()!.body as { messages: Array<{ role: string; content: unknown }> }).messages;
    const turns = messages.map((m) => [m.role, typeof m.content === 'string' ? m.content : JSON.stringify(m.content)]);
    expect(turns.filter(([role]) => role === 'assistant')).toHaveLength(1);
    expect(JSON.stringify(turns)).toContain('echo: Say one two three');
  });

  it('an inline image reaches the provider as an image', async () => {
    await genai(slug).models.generateContent({
      model: model(),
      contents: [{ role: 'user', parts: [{ text: 'What is this?' }, { inlineData: { mimeType: 'image/png', data: PIXEL } }] }],
    });
    const sent = JSON.stringify(fake().last()!.body);
    expect(sent).toContain(PIXEL);
    expect(sent).toMatch(slug === 'g-openai' ? /"image_url"/ : /"type":"image"/);
  });

  it('several text parts of one turn stay apart (never glued)', async () => {
    await genai(slug).models.generateContent({
      model: model(),
      contents: [{ role: 'user', parts: [{ text: '<system-reminder>be careful</system-reminder>' }, { text: 'first block.' }, { text: 'second block.' }] }],
    });
    const messages = (fake().last()!.body as { messages: Array<{ role: string; content: unknown }> }).messages;
    const content = messages.at(-1)!.content as Array<{ type: string; text: string }>;
    expect(content.map((p) => [p.type, p.text])).toEqual([
      ['text', '<system-reminder>be careful</system-reminder>'],
      ['text', 'first block.'],
      ['text', 'second block.'],
    ]);
  });

  it('a function call round trip: functionCall, then functionResponse, then the final text', async () => {
    const ai = genai(slug);
    const first = await ai.models.generateContent({ model: model(), contents: [askWeather], config: { tools: [weatherTool] } });
    const calls = first.functionCalls!;
    expect(calls).toHaveLength(1);
    expect(calls[0]!.name).toBe('get_weather');
    expect(calls[0]!.args).toEqual({ location: 'Paris' });
    const history: Content[] = [
      askWeather,
      first.candidates![0]!.content!,
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { forecast: 'sunny' } } }] },
    ];
    const second = await ai.models.generateContent({ model: model(), contents: history, config: { tools: [weatherTool] } });
    expect(second.text).toContain('tool said:');
    expect(second.text).toContain('sunny');
  });

  it('a streamed function call arrives whole, in one part', async () => {
    const stream = await genai(slug).models.generateContentStream({ model: model(), contents: [askWeather], config: { tools: [weatherTool] } });
    const calls = [];
    for await (const chunk of stream) calls.push(...(chunk.functionCalls ?? []));
    expect(calls).toHaveLength(1);
    expect(calls[0]!.name).toBe('get_weather');
    expect(calls[0]!.args).toEqual({ location: 'Paris' });
  });

  it('responseSchema is enforced as structured output on the provider', async () => {
    const res = await genai(slug).models.generateContent({
      model: model(),
      contents: 'Name a city',
      config: {
        responseMimeType: 'application/json',
        responseSchema: { type: Type.OBJECT, properties: { city: { type: Type.STRING } }, required: ['city'] },
      },
    });
    const sent = fake().last()!.body as Record<string, any>;
    if (slug === 'g-openai') {
      expect(sent.response_format.type).toBe('json_schema');
      expect(sent.response_format.json_schema.schema).toMatchObject({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] });
    } else {
      // Anthropic: a forced answer tool whose input schema is the response schema.
      const tool = sent.tools.find((t: any) => t.input_schema?.properties?.city);
      expect(tool.input_schema.properties.city.type).toBe('string');
      expect(sent.tool_choice).toMatchObject({ type: 'tool', name: tool.name });
    }
    expect(typeof JSON.parse(res.text!)).toBe('object');
  });

  it('a provider 429 is a Google RESOURCE_EXHAUSTED error', async () => {
    const err = await genai(slug)
      .models.generateContent({ model: `${model()}-fail-429`, contents: 'hi' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(429);
    expect(JSON.parse((err as ApiError).message).error).toMatchObject({ code: 429, status: 'RESOURCE_EXHAUSTED' });
  });

  it('a stream cut after the first chunk ends with an error event (after a 200), never a 502', async () => {
    // The fake sends four frames (two of them text), then drops the connection.
    fake().setBehaviour({ cutAfter: 4 });
    const res = await fetch(`${gw.url}/v1beta/models/${model()}:streamGenerateContent?alt=sse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': gw.adminKey, 'x-gateway-provider': `@${slug}` },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'Say one two three four five six' }] }] }),
    });
    expect(res.status).toBe(200);
    const events = sseEvents(await res.text());
    expect(events.length, JSON.stringify(events)).toBeGreaterThan(1);
    expect(events[0].candidates[0].content.parts[0].text).toBeTruthy();
    const last = events.at(-1);
    expect(last.error).toMatchObject({ code: 502 });
    expect(last.error.status).toBe('UNAVAILABLE');
    expect(events.some((e) => e.candidates?.[0]?.finishReason)).toBe(false);
  });
});

describe('Gemini routes: auth, errors, embeddings, log, cache', () => {
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${gw.url}/v1beta/models/${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const hello = { contents: [{ role: 'user', parts: [{ text: 'hello' }] }] };

  it('a bad body is a 400 INVALID_ARGUMENT naming the field', async () => {
    const res = await post(
      'gpt-4o-mini:generateContent',
      { contents: [{ role: 'user', parts: [{ text: 7 }] }] },
      { 'x-goog-api-key': gw.adminKey, 'x-gateway-provider': '@g-openai' },
    );
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
    expect(body.error.message).toContain('contents[0].parts[0]');
    const missing = await post('gpt-4o-mini:generateContent', {}, { 'x-goog-api-key': gw.adminKey, 'x-gateway-provider': '@g-openai' });
    expect(((await missing.json()) as any).error.message).toContain('contents');
  });

  it('a bad key is a Google UNAUTHENTICATED error, from the SDK and from ?key=', async () => {
    const err = await genai('g-openai', {}, 'not-a-key')
      .models.generateContent({ model: 'gpt-4o-mini', contents: 'hi' })
      .catch((e: unknown) => e);
    expect((err as ApiError).status).toBe(401);
    expect(JSON.parse((err as ApiError).message).error).toMatchObject({ code: 401, status: 'UNAUTHENTICATED' });
    const res = await post('gpt-4o-mini:generateContent?key=not-a-key', hello, { 'x-gateway-provider': '@g-openai' });
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.status).toBe('UNAUTHENTICATED');
  });

  it('?key= authenticates, is not forwarded, and the request log records the route and usage', async () => {
    const res = await post(`gpt-4o-mini:generateContent?key=${gw.adminKey}`, hello, {
      'x-gateway-provider': '@g-openai',
      'x-gateway-trace-id': 'gemini-key-query',
    });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(fakes.openai.last()!.url).not.toContain(gw.adminKey);
    const [record] = await logsOf('gemini-key-query');
    expect(record.route).toBe('gemini.generate_content');
    expect(record.status).toBe(200);
    expect(record.usage.prompt_tokens).toBeGreaterThan(0);
    expect(JSON.stringify(record)).not.toContain(gw.adminKey);
  });

  it('?key= is refused on other routes', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions?key=${gw.adminKey}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(401);
  });

  it('a client set to API version v1 is served under /v1/models too', async () => {
    const ai = new GoogleGenAI({ apiKey: gw.adminKey, apiVersion: 'v1', httpOptions: { baseUrl: gw.url, headers: { 'x-gateway-provider': '@g-openai' } } });
    const res = await ai.models.generateContent({ model: 'gpt-4o-mini', contents: 'Say hi' });
    expect(res.text).toBe('echo: Say hi');
    expect(fakes.openai.last()!.path).toBe('/v1/chat/completions');
  });

  it('an unknown method is a Google NOT_FOUND', async () => {
    const res = await post('gpt-4o-mini:predictLongRunning', hello, { 'x-goog-api-key': gw.adminKey });
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error).toMatchObject({ code: 404, status: 'NOT_FOUND' });
  });

  it('streamGenerateContent without alt=sse streams one JSON array, as Google does', async () => {
    const res = await post(
      'gpt-4o-mini:streamGenerateContent',
      { contents: [{ role: 'user', parts: [{ text: 'Say one two three' }] }] },
      {
        'x-goog-api-key': gw.adminKey,
        'x-gateway-provider': '@g-openai',
      },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    const events = (await res.json()) as any[];
    expect(events.length).toBeGreaterThan(1);
    expect(events.map((e) => e.candidates[0].content.parts[0]?.text ?? '').join('')).toBe('echo: Say one two three');
    expect(events.at(-1).candidates[0].finishReason).toBe('STOP');
  });

  it('embedContent and batchEmbedContents run on an OpenAI-backed provider', async () => {
    const ai = genai('g-openai');
    const batch = await ai.models.embedContent({ model: 'text-embedding-3-small', contents: ['first text', 'second text'] });
    expect(batch.embeddings).toHaveLength(2);
    expect(batch.embeddings![0]!.values!.length).toBeGreaterThan(0);
    expect((fakes.openai.last()!.body as { input: string[] }).input).toEqual(['first text', 'second text']);
    const one = await post(
      'text-embedding-3-small:embedContent',
      { content: { parts: [{ text: 'one text' }] }, outputDimensionality: 8 },
      {
        'x-goog-api-key': gw.adminKey,
        'x-gateway-provider': '@g-openai',
      },
    );
    expect(one.status).toBe(200);
    const body = (await one.json()) as any;
    expect(body.embedding.values).toHaveLength(8);
    expect(fakes.openai.last()!.body).toMatchObject({ input: 'one text', dimensions: 8 });
  });

  it("countTokens counts on every provider: Google's and Anthropic's own count APIs, the tokenizer for OpenAI models", async () => {
    const google = await genai('g-gemini').models.countTokens({ model: 'gemini-2.5-flash', contents: 'count these four words' });
    expect(google.totalTokens).toBeGreaterThan(0);
    expect(fakes.gemini.last()!.path).toContain('gemini-2.5-flash:countTokens');

    const claude = await genai('g-claude').models.countTokens({ model: 'claude-sonnet-4-5', contents: 'count these four words' });
    expect(claude.totalTokens).toBeGreaterThan(0);
    expect(fakes.anthropic.last()!.path).toContain('/messages/count_tokens');
    expect(fakes.anthropic.last()!.body).toMatchObject({ model: 'claude-sonnet-4-5', messages: [{ role: 'user' }] });

    const openaiCalls = fakes.openai.count();
    // o200k_base: "count these four words" is 4 tokens and the role "user" 1, plus OpenAI's
    // chat framing of one message (3) and the reply priming (3).
    const res = await post(
      'gpt-4o-mini:countTokens',
      { contents: [{ role: 'user', parts: [{ text: 'count these four words' }] }] },
      { 'x-goog-api-key': gw.adminKey, 'x-gateway-provider': '@g-openai' },
    );
    expect(res.status, await res.clone().text()).toBe(200);
    expect(res.headers.get('x-gateway-token-count-method')).toBe('tokenizer');
    expect(await res.json()).toEqual({ totalTokens: 11 });
    expect(fakes.openai.count()).toBe(openaiCalls);
  });

  it('x-gateway-api-key with x-goog-api-key: the latter is the provider key', async () => {
    const res = await post('gemini-2.5-flash:generateContent', hello, {
      'x-gateway-api-key': gw.adminKey,
      'x-goog-api-key': 'gemini-key',
      'x-gateway-provider': 'google',
      'x-gateway-custom-host': `${fakes.gemini.url}/v1beta`,
    });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(fakes.gemini.last()!.headers['x-goog-api-key']).toBe('gemini-key');
  });

  it('safetySettings reach a Google target and are not sent elsewhere', async () => {
    const safetySettings = [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_ONLY_HIGH' }];
    const body = { ...hello, safetySettings };
    const toGoogle = await post('gemini-2.5-flash:generateContent', body, { 'x-goog-api-key': gw.adminKey, 'x-gateway-provider': '@g-gemini' });
    expect(toGoogle.status, await toGoogle.clone().text()).toBe(200);
    expect((fakes.gemini.last()!.body as { safetySettings: unknown }).safetySettings).toEqual(safetySettings);
    const toOpenAI = await post('gpt-4o-mini:generateContent', body, { 'x-goog-api-key': gw.adminKey, 'x-gateway-provider': '@g-openai' });
    expect(toOpenAI.status).toBe(200);
    expect(JSON.stringify(fakes.openai.last()!.body)).not.toContain('HARM_CATEGORY');
  });

  it('what cannot be translated is a 400 naming the field', async () => {
    const headers = { 'x-goog-api-key': gw.adminKey, 'x-gateway-provider': '@g-openai' };
    for (const [extra, field] of [
      [{ cachedContent: 'cachedContents/abc' }, 'cachedContent'],
      [{ generationConfig: { candidateCount: 2 } }, 'generationConfig.candidateCount'],
      [{ tools: [{ googleSearch: {} }] }, 'tools[0].googleSearch'],
      [{ contents: [{ role: 'user', parts: [{ functionResponse: { name: 'nope', response: {} } }] }] }, 'contents[0].parts[0].functionResponse'],
    ] as const) {
      const res = await post('gpt-4o-mini:generateContent', { ...hello, ...extra }, headers);
      expect(res.status, field).toBe(400);
      const error = ((await res.json()) as any).error;
      expect(error.status).toBe('INVALID_ARGUMENT');
      expect(error.message).toContain(field);
    }
    expect(fakes.openai.count()).toBe(0);
  });

  it('cached prompt tokens are reported as cachedContentTokenCount', async () => {
    fakes.openai.setBehaviour({
      respond: () => ({
        status: 200,
        body: {
          id: 'chatcmpl-cached',
          object: 'chat.completion',
          created: 1,
          model: 'gpt-4o-mini',
          choices: [{ index: 0, message: { role: 'assistant', content: 'cached answer' }, finish_reason: 'stop', logprobs: null }],
          usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12, prompt_tokens_details: { cached_tokens: 4 } },
        },
      }),
    });
    const res = await genai('g-openai').models.generateContent({ model: 'gpt-4o-mini', contents: 'a long shared prefix' });
    expect(res.usageMetadata).toMatchObject({ promptTokenCount: 10, candidatesTokenCount: 2, totalTokenCount: 12, cachedContentTokenCount: 4 });
  });

  it('the simple cache answers the second call (HIT), and replays a stream as Gemini events', async () => {
    const config = JSON.stringify({ provider: '@g-openai', cache: { mode: 'simple', max_age: 600 } });
    const ai = genai('g-openai', { 'x-gateway-config': config, 'x-gateway-provider': '' });
    const contents = `cache me ${Date.now()}`;
    const first = await ai.models.generateContent({ model: 'gpt-4o-mini', contents });
    expect(first.sdkHttpResponse?.headers?.['x-gateway-cache-status']).toBe('MISS');
    let again = first;
    for (let i = 0; i < 50 && again.sdkHttpResponse?.headers?.['x-gateway-cache-status'] !== 'HIT'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      again = await ai.models.generateContent({ model: 'gpt-4o-mini', contents });
    }
    expect(again.sdkHttpResponse?.headers?.['x-gateway-cache-status']).toBe('HIT');
    expect(again.text).toBe(first.text);

    const streamed = async () => {
      const res = await post(
        'gpt-4o-mini:streamGenerateContent?alt=sse',
        { contents: [{ role: 'user', parts: [{ text: `${contents} streamed` }] }] },
        {
          'x-goog-api-key': gw.adminKey,
          'x-gateway-config': config,
        },
      );
      const events = sseEvents(await res.text());
      return {
        status: res.headers.get('x-gateway-cache-status'),
        text: events.map((e) => e.candidates?.[0]?.content?.parts?.[0]?.text ?? '').join(''),
        events,
      };
    };
    const live = await streamed();
    expect(live.status).toBe('MISS');
    let replay = live;
    for (let i = 0; i < 50 && replay.status !== 'HIT'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      replay = await streamed();
    }
    expect(replay.status).toBe('HIT');
    expect(replay.text).toBe(live.text);
    expect(replay.events.at(-1).candidates[0].finishReason).toBe('STOP');
    expect(fakes.openai.count('/v1/chat/completions')).toBe(2);
  });
});
