import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI, { toFile } from 'openai';
import type { LocalGateway } from '../../infra/local/server';
import { fakeSpeechBytes, startBedrockFake, startCohereFake, startGeminiFake, startOpenAIFake, startWatsonxFake, type FakeServer } from '../fakes';
import { startTestGateway } from '../support/gateway';

let gw: LocalGateway;
let gemini: FakeServer;
let bedrock: FakeServer;
let cohere: FakeServer;
let openai: FakeServer;
let watsonx: FakeServer;

const AWS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };

beforeAll(async () => {
  [gemini, bedrock, cohere, openai, watsonx] = await Promise.all([
    startGeminiFake(),
    startBedrockFake({ credentials: AWS }),
    startCohereFake(),
    startOpenAIFake(),
    startWatsonxFake({ apiKey: 'ibm-key' }),
  ]);
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all([gemini, bedrock, cohere, openai, watsonx].map((f) => f?.close()));
});

/** Per provider: the headers a caller sends, pointed at the fake. */
const providers: Record<string, () => Record<string, string>> = {
  google: () => ({ 'x-gateway-provider': 'google', authorization: 'Bearer gemini-key', 'x-gateway-custom-host': `${gemini.url}/v1beta` }),
  'vertex-ai': () => ({
    'x-gateway-provider': 'vertex-ai',
    authorization: 'Bearer ya29.token',
    'x-gateway-vertex-project-id': 'my-project',
    'x-gateway-vertex-region': 'us-central1',
    'x-gateway-custom-host': `${gemini.url}/v1`,
  }),
  bedrock: () => ({
    'x-gateway-provider': 'bedrock',
    'x-gateway-aws-access-key-id': AWS.accessKeyId,
    'x-gateway-aws-secret-access-key': AWS.secretAccessKey,
    'x-gateway-aws-region': 'us-east-1',
    'x-gateway-custom-host': bedrock.url,
  }),
  cohere: () => ({ 'x-gateway-provider': 'cohere', authorization: 'Bearer co-key', 'x-gateway-custom-host': cohere.url }),
  'azure-openai': () => ({
    'x-gateway-provider': 'azure-openai',
    authorization: 'Bearer azure-key',
    'x-gateway-azure-resource-name': 'myresource',
    'x-gateway-azure-deployment-id': 'gpt4o-deploy',
    // A custom host replaces the provider's base URL, which for Azure ends in /openai.
    'x-gateway-custom-host': `${openai.url}/openai`,
  }),
  watsonx: () => ({
    'x-gateway-provider': 'watsonx',
    authorization: 'Bearer ibm-key',
    'x-gateway-watsonx-project-id': 'proj-sdk',
    'x-gateway-watsonx-iam-url': `${watsonx.url}/identity/token`,
    'x-gateway-custom-host': watsonx.url,
  }),
};

const models: Record<string, string> = {
  google: 'gemini-2.0-flash',
  'vertex-ai': 'gemini-2.0-flash',
  bedrock: 'anthropic.claude-3-5-sonnet-20240620-v1:0',
  cohere: 'command-a-03-2025',
  'azure-openai': 'gpt-4o',
  watsonx: 'meta-llama/llama-3-3-70b-instruct',
};

const client = (slug: string) =>
  new OpenAI({ baseURL: gw.baseUrl, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': gw.adminKey, ...providers[slug]!() } });

const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
  },
};

describe.each(Object.keys(providers))('%s through the OpenAI SDK', (slug) => {
  it('chat completion', async () => {
    const res = await client(slug).chat.completions.create({
      model: models[slug]!,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: `hello ${slug}` },
      ],
    });
    expect(res.object).toBe('chat.completion');
    expect(res.choices[0]!.message.content).toBe(`echo: hello ${slug}`);
    expect(res.choices[0]!.finish_reason).toBe('stop');
    expect(res.usage!.total_tokens).toBeGreaterThan(0);
  });

  it('streamed chat with usage', async () => {
    const stream = await client(slug).chat.completions.create({
      model: models[slug]!,
      messages: [{ role: 'user', content: `stream from ${slug}` }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage = 0;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage?.total_tokens ?? usage;
    }
    expect(text).toBe(`echo: stream from ${slug}`);
    expect(finish).toBe('stop');
    expect(usage).toBeGreaterThan(0);
  });

  it('a tool-call round trip, the second turn streamed', async () => {
    const c = client(slug);
    const first = await c.chat.completions.create({
      model: models[slug]!,
      messages: [{ role: 'user', content: 'what is the weather in Lisbon' }],
      tools: [weatherTool],
    });
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    const call = first.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ location: 'Lisbon' });
    const final = await c.chat.completions
      .stream({
        model: models[slug]!,
        tools: [weatherTool],
        messages: [
          { role: 'user', content: 'what is the weather in Lisbon' },
          { role: 'assistant', content: null, tool_calls: [call] },
          { role: 'tool', tool_call_id: call.id, content: 'rainy, 14C' },
        ],
      })
      .finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe('tool said: rainy, 14C');
  });
});

describe('provider specifics', () => {
  it('Bedrock requests are SigV4-signed (the fake verifies the signature) with the model id in the path', async () => {
    bedrock.reset();
    await client('bedrock').chat.completions.create({ model: models.bedrock!, messages: [{ role: 'user', content: 'sig' }] });
    const req = bedrock.last()!;
    expect(req.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/bedrock\/aws4_request/);
    expect(req.path).toBe(`/model/${encodeURIComponent(models.bedrock!)}/converse`);
  });

  it('Vertex receives X-Vertex-AI-LLM-Request-Type from the caller on unified routes', async () => {
    gemini.reset();
    const c = new OpenAI({
      baseURL: gw.baseUrl,
      apiKey: 'unused',
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-api-key': gw.adminKey, ...providers['vertex-ai']!(), 'X-Vertex-AI-LLM-Request-Type': 'dedicated' },
    });
    await c.chat.completions.create({ model: models['vertex-ai']!, messages: [{ role: 'user', content: 'pt' }] });
    expect(gemini.last()!.headers['x-vertex-ai-llm-request-type']).toBe('dedicated');
    expect(gemini.last()!.path).toBe('/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent');
  });

  it('Azure calls the deployment URL with api-version and the api-key header', async () => {
    openai.reset();
    await client('azure-openai').chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'az' }] });
    const req = openai.last()!;
    expect(req.path).toBe('/openai/deployments/gpt4o-deploy/chat/completions');
    expect(req.query['api-version']).toBeTruthy();
    expect(req.headers['api-key']).toBe('azure-key');
  });

  it('missing cloud settings are a 400 that says which header to send', async () => {
    const res = await fetch(`${gw.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': 'bedrock' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/x-gateway-aws/);
  });

  it.each(['google', 'vertex-ai', 'cohere', 'bedrock'])('embeddings through %s come back in the OpenAI shape', async (slug) => {
    const model = { google: 'text-embedding-004', 'vertex-ai': 'text-embedding-004', cohere: 'embed-v4.0', bedrock: 'cohere.embed-english-v3' }[slug]!;
    const res = await client(slug).embeddings.create({ model, input: ['first text', 'second'], encoding_format: 'float' });
    expect(res.object).toBe('list');
    expect(res.data.map((d) => d.index)).toEqual([0, 1]);
    expect(res.data[0]!.embedding.length).toBeGreaterThan(0);
    expect(typeof res.data[0]!.embedding[0]).toBe('number');
  });

  it('Titan embeddings on Bedrock take one input: a list is a clear 400, a string works', async () => {
    const err = await client('bedrock')
      .embeddings.create({ model: 'amazon.titan-embed-text-v2:0', input: ['a', 'b'] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as Error).message).toMatch(/one input per request/);
    const one = await client('bedrock').embeddings.create({ model: 'amazon.titan-embed-text-v2:0', input: 'single', encoding_format: 'float' });
    expect(one.data).toHaveLength(1);
  });

  it('unsupported operation names the provider and the operation', async () => {
    const res = await fetch(`${gw.baseUrl}/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': 'voyage', authorization: 'Bearer v' },
      body: JSON.stringify({ model: 'm', input: 'x' }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/voyage.*embeddings/);
  });
});

describe('audio', () => {
  const audioClient = () =>
    new OpenAI({
      baseURL: gw.baseUrl,
      apiKey: 'sk-audio',
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${openai.url}/v1` },
    });

  it('speech: binary audio streamed back unchanged', async () => {
    const res = await audioClient().audio.speech.create({ model: 'tts-1', voice: 'alloy', input: 'hello audio' });
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.equals(fakeSpeechBytes('hello audio', 'alloy'))).toBe(true);
  });

  it('transcriptions: multipart passed through', async () => {
    const file = await toFile(Buffer.from('RIFF....WAVEfmt fake audio'), 'clip.wav', { type: 'audio/wav' });
    const res = await audioClient().audio.transcriptions.create({ model: 'whisper-1', file });
    expect(typeof res.text).toBe('string');
    const req = openai.last()!;
    expect(req.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(req.form?.fields.model).toBe('whisper-1');
  });
});
