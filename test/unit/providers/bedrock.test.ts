import { createHash, createHmac } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { GatewayError } from '../../../functions/shared/errors';
import { eventStreamCodec } from '../../../functions/providers/_shared/aws-eventstream';
import { signSigV4 } from '../../../functions/providers/_shared/aws-sigv4';
import { bedrock } from '../../../functions/providers/bedrock';
import { getAdapter } from '../../../functions/providers/registry';
import type { ChatRequest, ProviderTarget, UpstreamRequest } from '../../../functions/providers/types';
import { contentOf, ctx, run, type Run } from './stream-helpers';

const creds = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const target: ProviderTarget = { provider: 'bedrock', aws: { ...creds, region: 'us-east-1' } };
const chat = bedrock.chat!;
const CLAUDE = 'anthropic.claude-3-5-sonnet-20240620-v1:0';
const hello: ChatRequest = { model: CLAUDE, messages: [{ role: 'user', content: 'Hello' }] };
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

describe('bedrock converse requests', () => {
  it('is registered under its slug', async () => {
    expect(await getAdapter('bedrock')).toBe(bedrock);
  });

  it('posts to /model/{url-encoded id}/converse[-stream] with JSON, unsigned until sign()', () => {
    expect(chat.request(hello, target)).toEqual({
      url: 'https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse',
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'Hello' }] }] }),
    });
    const arn = 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-sonnet-20240620-v1:0';
    expect(chat.request({ ...hello, model: arn, stream: true }, target).url).toBe(
      'https://bedrock-runtime.us-east-1.amazonaws.com/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream',
    );
  });

  it('translates system, images, tool calls, merged tool results, tools and inference params', () => {
    const body = bodyOf({
      model: CLAUDE,
      max_tokens: 300,
      temperature: 0.5,
      top_p: 0.9,
      stop: ['END'],
      tool_choice: 'required',
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          },
        },
        { type: 'function', function: { name: 'now' } },
      ],
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: 'Metric units.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this, and the weather?' },
            { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQ' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [
            { id: 'tooluse_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
            { id: 'tooluse_2', type: 'function', function: { name: 'now', arguments: '' } },
          ],
        },
        { role: 'tool', tool_call_id: 'tooluse_1', content: '{"temp":3}' },
        { role: 'tool', tool_call_id: 'tooluse_2', content: [{ type: 'text', text: '09:00' }] },
        { role: 'user', content: 'And tomorrow?' },
      ],
    });
    expect(body).toEqual({
      messages: [
        {
          role: 'user',
          content: [{ text: 'What is this, and the weather?' }, { image: { format: 'jpeg', source: { bytes: '/9j/4AAQ' } } }],
        },
        {
          role: 'assistant',
          content: [
            { text: 'Checking.' },
            { toolUse: { toolUseId: 'tooluse_1', name: 'get_weather', input: { city: 'Oslo' } } },
            { toolUse: { toolUseId: 'tooluse_2', name: 'now', input: {} } },
          ],
        },
        {
          role: 'user',
          content: [
            { toolResult: { toolUseId: 'tooluse_1', content: [{ text: '{"temp":3}' }] } },
            { toolResult: { toolUseId: 'tooluse_2', content: [{ text: '09:00' }] } },
            { text: 'And tomorrow?' },
          ],
        },
      ],
      system: [{ text: 'Be brief.' }, { text: 'Metric units.' }],
      inferenceConfig: { maxTokens: 300, temperature: 0.5, topP: 0.9, stopSequences: ['END'] },
      toolConfig: {
        tools: [
          {
            toolSpec: {
              name: 'get_weather',
              description: 'Weather',
              inputSchema: { json: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
            },
          },
          { toolSpec: { name: 'now', inputSchema: { json: { type: 'object', properties: {} } } } },
        ],
        toolChoice: { any: {} },
      },
    });
  });

  it('maps tool_choice and keeps toolConfig when history has tool blocks', () => {
    const tools = [{ type: 'function' as const, function: { name: 'f', parameters: { type: 'object' } } }];
    expect(bodyOf({ ...hello, tools, tool_choice: 'auto' }).toolConfig.toolChoice).toEqual({ auto: {} });
    expect(bodyOf({ ...hello, tools, tool_choice: { type: 'function', function: { name: 'f' } } }).toolConfig.toolChoice).toEqual({ tool: { name: 'f' } });
    expect(bodyOf({ ...hello, tools, tool_choice: 'none' }).toolConfig).toBeUndefined();
    const history: ChatRequest['messages'] = [
      { role: 'user', content: 'x' },
      { role: 'assistant', tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 't1', content: 'ok' },
    ];
    expect(bodyOf({ ...hello, messages: history, tools, tool_choice: 'none' }).toolConfig).toEqual({
      tools: [{ toolSpec: { name: 'f', inputSchema: { json: { type: 'object' } } } }],
    });
  });

  it('rejects remote image URLs, bad arguments and unsafe model ids', () => {
    const img = gatewayError(() => bodyOf({ ...hello, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }] }));
    expect([img.status, img.param]).toEqual([400, 'messages[0].content[0].image_url.url']);
    const args = gatewayError(() =>
      bodyOf({ ...hello, messages: [{ role: 'assistant', tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '[1' } }] }] }),
    );
    expect(args.param).toBe('messages[0].tool_calls[0].function.arguments');
    for (const model of ['..', '../converse', '', 'a b', 'x?y']) expect(gatewayError(() => chat.request({ ...hello, model }, target)).param).toBe('model');
  });

  it('rejects missing or unsafe AWS settings with a 400 naming the header', () => {
    const noRegion = gatewayError(() => chat.request(hello, { provider: 'bedrock', aws: creds }));
    expect([noRegion.status, noRegion.param]).toEqual([400, 'x-gateway-aws-region']);
    expect(noRegion.message).toContain('x-gateway-aws-region');
    for (const region of ['us-east-1.evil.com', 'us-east-1/x', 'localhost', 'us-east-12']) {
      expect(gatewayError(() => bedrock.baseUrl({ ...target, aws: { ...creds, region } })).param).toBe('x-gateway-aws-region');
    }
    const noCreds = gatewayError(() => chat.request(hello, { provider: 'bedrock', aws: { region: 'us-east-1' } }));
    expect([noCreds.status, noCreds.param]).toEqual([400, 'x-gateway-aws-access-key-id']);
    const noSecret = gatewayError(() => chat.request(hello, { provider: 'bedrock', aws: { accessKeyId: 'AKID', region: 'us-east-1' } }));
    expect(noSecret.param).toBe('x-gateway-aws-secret-access-key');
  });

  it('honours customHost and forwarded headers (never x-gateway-*), and builds the proxy base URL', () => {
    const t: ProviderTarget = { ...target, customHost: 'http://127.0.0.1:4010/', forwardHeaders: { 'x-gateway-trace-id': 't', 'x-request-tag': 'a' } };
    const req = chat.request(hello, t);
    expect(req.url).toBe('http://127.0.0.1:4010/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse');
    expect(req.headers).toEqual({ 'x-request-tag': 'a', 'content-type': 'application/json' });
    expect(bedrock.baseUrl(target)).toBe('https://bedrock-runtime.us-east-1.amazonaws.com');
  });

  it('uses a Bedrock API key as Bearer when no AWS credentials are given', async () => {
    const t: ProviderTarget = { provider: 'bedrock', apiKey: 'ABSKbedrockkey', aws: { region: 'eu-west-1' } };
    const req = chat.request(hello, t);
    expect(req.headers.authorization).toBe('Bearer ABSKbedrockkey');
    const signed = await bedrock.sign!(req, t);
    expect(signed.headers).toEqual({ 'content-type': 'application/json', authorization: 'Bearer ABSKbedrockkey' });
  });
});

describe('bedrock converse responses', () => {
  it('maps text, tool use, stop reasons and usage (cache tokens in prompt_tokens)', () => {
    const out = chat.response(
      {
        output: {
          message: {
            role: 'assistant',
            content: [{ text: 'Let me check.' }, { toolUse: { toolUseId: 'tooluse_abc', name: 'get_weather', input: { city: 'Oslo' } } }],
          },
        },
        stopReason: 'tool_use',
        usage: { inputTokens: 10, outputTokens: 5, totalTokens: 25, cacheReadInputTokens: 8, cacheWriteInputTokens: 2 },
        metrics: { latencyMs: 100 },
      },
      ctx(),
    );
    expect(out).toEqual({
      id: 'chatcmpl-gw1',
      object: 'chat.completion',
      created: 1700000000,
      model: 'caller-model',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Let me check.',
            refusal: null,
            tool_calls: [{ id: 'tooluse_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }],
          },
          logprobs: null,
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25, prompt_tokens_details: { cached_tokens: 8, cache_write_tokens: 2 } },
    });
    const finish = (stopReason: string) =>
      chat.response({ output: { message: { content: [{ text: 'x' }] } }, stopReason, usage: {} }, ctx()).choices[0]!.finish_reason;
    expect(['end_turn', 'stop_sequence', 'max_tokens', 'guardrail_intervened', 'content_filtered', 'model_context_window_exceeded'].map(finish)).toEqual([
      'stop',
      'stop',
      'length',
      'content_filter',
      'content_filter',
      'length',
    ]);
  });
});

// ---- ConverseStream: binary event-stream frames ------------------------------------
const codec = eventStreamCodec();
const str = (value: string) => ({ type: 'string' as const, value });
const eventFrame = (eventType: string, payload: object) =>
  codec.encode({
    headers: { ':event-type': str(eventType), ':content-type': str('application/json'), ':message-type': str('event') },
    body: Buffer.from(JSON.stringify({ ...payload, p: 'abcdefghijklmnopqrstuvwxyzABCDEF' })),
  });
const exceptionFrame = (type: string, message: string) =>
  codec.encode({
    headers: { ':exception-type': str(type), ':content-type': str('application/json'), ':message-type': str('exception') },
    body: Buffer.from(JSON.stringify({ message })),
  });
const concat = (frames: Uint8Array[]) => Buffer.concat(frames.map((f) => Buffer.from(f)));

const frames = [
  eventFrame('messageStart', { role: 'assistant' }),
  eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Névé ' } }),
  eventFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'check ⛄' } }),
  eventFrame('contentBlockStop', { contentBlockIndex: 0 }),
  eventFrame('contentBlockStart', { contentBlockIndex: 1, start: { toolUse: { toolUseId: 'tooluse_1', name: 'get_weather' } } }),
  eventFrame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '{"city":' } } }),
  eventFrame('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '"Oslo"}' } } }),
  eventFrame('contentBlockStop', { contentBlockIndex: 1 }),
  eventFrame('messageStop', { stopReason: 'tool_use' }),
  eventFrame('metadata', { usage: { inputTokens: 12, outputTokens: 7, totalTokens: 19 }, metrics: { latencyMs: 321 } }),
];
const wire = concat(frames);

/** Offsets: inside a frame's 4-byte length, inside its headers, inside its payload. */
function awkwardCuts(): number[] {
  const cuts: number[] = [];
  let start = 0;
  for (const f of frames) {
    const headersLength = new DataView(f.buffer, f.byteOffset).getUint32(4);
    cuts.push(start + 2, start + 12 + 5, start + 12 + headersLength + 3);
    start += f.byteLength;
  }
  return cuts;
}

function runSplit(bytes: Buffer, cuts: number[], includeUsage = false): Run {
  const points = [0, ...cuts, bytes.length];
  return run(
    chat.stream!(ctx({ includeUsage })),
    points.slice(1).map((end, i) => bytes.subarray(points[i], end)),
  );
}

describe('bedrock converse stream', () => {
  it('decodes frames split mid-length, mid-header and mid-payload into OpenAI chunks', () => {
    const whole = runSplit(wire, []);
    expect(runSplit(wire, awkwardCuts())).toEqual(whole);
    expect(
      runSplit(
        wire,
        Array.from({ length: wire.length - 1 }, (_, i) => i + 1),
      ),
    ).toEqual(whole);
    expect(whole.error).toBeUndefined();
    expect(contentOf(whole.chunks)).toBe('Névé check ⛄');
    expect(whole.chunks.map((c) => c.choices[0]!.delta)).toEqual([
      { role: 'assistant', content: '' },
      { content: 'Névé ' },
      { content: 'check ⛄' },
      { tool_calls: [{ index: 0, id: 'tooluse_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] },
      {},
    ]);
    expect(whole.chunks.at(-1)!.choices[0]!.finish_reason).toBe('tool_calls');
    expect(whole.chunks.every((c) => c.id === 'chatcmpl-gw1' && c.model === 'caller-model' && !('usage' in c))).toBe(true);
    expect(whole.usage).toEqual({ prompt_tokens: 12, completion_tokens: 7, total_tokens: 19, prompt_tokens_details: { cached_tokens: 0 } });
  });

  it('adds the usage chunk after the finish when asked for', () => {
    const out = runSplit(wire, awkwardCuts(), true);
    expect(out.chunks).toHaveLength(8);
    expect(out.chunks[7]).toMatchObject({ choices: [], usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 } });
    expect(out.chunks.slice(0, 7).every((c) => c.usage === null)).toBe(true);
  });

  it('turns exception frames into StreamErrors with the contract status', () => {
    const cases: Array<[string, number]> = [
      ['throttlingException', 429],
      ['modelStreamErrorException', 424],
      ['validationException', 400],
      ['internalServerException', 500],
      ['serviceUnavailableException', 503],
    ];
    for (const [type, status] of cases) {
      const bytes = concat([frames[0]!, frames[1]!, exceptionFrame(type, `boom ${type}`), frames[2]!]);
      const out = runSplit(bytes, [frames[0]!.byteLength + 20]);
      expect(contentOf(out.chunks)).toBe('Névé ');
      expect(out.error).toMatchObject({ status, message: `boom ${type}`, code: type });
    }
  });

  it('reports corrupt and truncated streams as 502', () => {
    const corrupt = Buffer.from(wire);
    const at = frames[0]!.byteLength + 20; // inside frame 2: its CRC no longer matches
    corrupt[at] = corrupt[at]! ^ 0xff;
    const bad = runSplit(corrupt, []);
    expect(bad.chunks).toHaveLength(1);
    expect(bad.error?.status).toBe(502);
    const truncated = runSplit(wire.subarray(0, wire.length - 5), []);
    expect(truncated.error).toMatchObject({ status: 502, message: expect.stringContaining('ended inside a frame') });
  });
});

// ---- SigV4 -----------------------------------------------------------------------
const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

/** SigV4 written out from the contract's description, with the canonical URI given by hand. */
function independentSignature(opts: {
  method: string;
  canonicalUri: string;
  canonicalQuery: string;
  headers: Record<string, string>;
  signed: string[];
  body: string;
  secret: string;
  region: string;
}): string {
  const amzDate = opts.headers['x-amz-date']!;
  const day = amzDate.slice(0, 8);
  const canonicalHeaders = opts.signed.map((n) => `${n}:${opts.headers[n]!.trim()}\n`).join('');
  const canonicalRequest = [opts.method, opts.canonicalUri, opts.canonicalQuery, canonicalHeaders, opts.signed.join(';'), sha256(opts.body)].join('\n');
  const scope = `${day}/${opts.region}/bedrock/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonicalRequest)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${opts.secret}`, day), opts.region), 'bedrock'), 'aws4_request');
  return createHmac('sha256', key).update(stringToSign).digest('hex');
}

const signingDate = new Date('2024-05-01T12:34:56Z');

describe('bedrock SigV4', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('double-encodes the %3A of the model id in the canonical request', async () => {
    const req = chat.request(hello, { ...target, forwardHeaders: { 'x-request-tag': 'a' } });
    const signed = await signSigV4(req, { region: 'us-east-1', service: 'bedrock', credentials: creds, signingDate });
    expect(signed.url).toBe(req.url); // the wire path keeps the single encoding
    expect(signed.headers.host).toBe('bedrock-runtime.us-east-1.amazonaws.com');
    expect(signed.headers['x-amz-date']).toBe('20240501T123456Z');
    const common = {
      method: 'POST',
      canonicalQuery: '',
      headers: signed.headers,
      signed: ['content-type', 'host', 'x-amz-date'],
      body: req.body as string,
      secret: creds.secretAccessKey,
      region: 'us-east-1',
    };
    const expected = independentSignature({ ...common, canonicalUri: '/model/anthropic.claude-3-5-sonnet-20240620-v1%253A0/converse' });
    expect(signed.headers.authorization).toBe(
      `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240501/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=${expected}`,
    );
    // Signing the single-encoded path (the classic bug) gives another signature.
    expect(independentSignature({ ...common, canonicalUri: '/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse' })).not.toBe(expected);
  });

  it('signs ARNs (%2F too), session tokens, and any proxied method, path and query', async () => {
    const session: ProviderTarget = { provider: 'bedrock', aws: { ...creds, sessionToken: 'IQoJb3JpZ2luX2VjEXAMPLE', region: 'eu-central-1' } };
    const arn = 'arn:aws:bedrock:eu-central-1:123456789012:inference-profile/eu.anthropic.claude-3-5-sonnet-20240620-v1:0';
    const req = chat.request({ ...hello, model: arn, stream: true }, session);
    vi.useFakeTimers();
    vi.setSystemTime(signingDate);
    const signed = await bedrock.sign!(req, session);
    vi.useRealTimers();
    expect(signed.headers['x-amz-security-token']).toBe('IQoJb3JpZ2luX2VjEXAMPLE');
    const signedNames = ['content-type', 'host', 'x-amz-date', 'x-amz-security-token'];
    const expected = independentSignature({
      method: 'POST',
      canonicalUri:
        '/model/arn%253Aaws%253Abedrock%253Aeu-central-1%253A123456789012%253Ainference-profile%252Feu.anthropic.claude-3-5-sonnet-20240620-v1%253A0/converse-stream',
      canonicalQuery: '',
      headers: signed.headers,
      signed: signedNames,
      body: req.body as string,
      secret: creds.secretAccessKey,
      region: 'eu-central-1',
    });
    expect(signed.headers.authorization).toBe(
      `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240501/eu-central-1/bedrock/aws4_request, SignedHeaders=${signedNames.join(';')}, Signature=${expected}`,
    );

    const proxied: UpstreamRequest = {
      url: `${bedrock.baseUrl(target)}/model/${encodeURIComponent(CLAUDE)}/invoke?b=2&a=x%20y`,
      method: 'GET',
      headers: { accept: 'application/json', 'accept-encoding': 'identity' },
    };
    const signedGet = await signSigV4(proxied, { region: 'us-east-1', service: 'bedrock', credentials: creds, signingDate });
    const expectedGet = independentSignature({
      method: 'GET',
      canonicalUri: '/model/anthropic.claude-3-5-sonnet-20240620-v1%253A0/invoke',
      canonicalQuery: 'a=x%20y&b=2',
      headers: signedGet.headers,
      signed: ['host', 'x-amz-date'],
      body: '',
      secret: creds.secretAccessKey,
      region: 'us-east-1',
    });
    expect(signedGet.headers.authorization).toContain(`SignedHeaders=host;x-amz-date, Signature=${expectedGet}`);
    expect(signedGet.headers.accept).toBe('application/json');
  });
});

describe('bedrock embeddings (InvokeModel)', () => {
  const emb = bedrock.embeddings!;

  it('sends Titan one input, Cohere a batch, and maps both back', () => {
    const titan = emb.request({ model: 'amazon.titan-embed-text-v2:0', input: 'hello', dimensions: 256 }, target);
    expect(titan.url).toBe('https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.titan-embed-text-v2%3A0/invoke');
    expect(JSON.parse(titan.body as string)).toEqual({ inputText: 'hello', dimensions: 256 });
    expect(emb.response!({ embedding: [0.1, 0.2], inputTextTokenCount: 2 }, ctx({ model: 'amazon.titan-embed-text-v2:0' }))).toEqual({
      object: 'list',
      data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }],
      model: 'amazon.titan-embed-text-v2:0',
      usage: { prompt_tokens: 2, total_tokens: 2 },
    });
    const cohere = emb.request({ model: 'cohere.embed-english-v3', input: ['a', 'b'] }, target);
    expect(JSON.parse(cohere.body as string)).toEqual({ texts: ['a', 'b'], input_type: 'search_document', embedding_types: ['float'] });
    const out = emb.response!({ id: 'x', embeddings: { float: [[1], [2]] }, response_type: 'embeddings_by_type' }, ctx());
    expect(out.data.map((d) => d.embedding)).toEqual([[1], [2]]);
    expect(emb.response!({ embeddings: [[3], [4]] }, ctx()).data.map((d) => d.embedding)).toEqual([[3], [4]]);
  });

  it('rejects Titan batches and unknown model families', () => {
    expect(gatewayError(() => emb.request({ model: 'amazon.titan-embed-text-v1', input: ['a', 'b'] }, target)).param).toBe('input');
    expect(gatewayError(() => emb.request({ model: 'meta.llama3-8b-instruct-v1:0', input: 'a' }, target)).param).toBe('model');
  });
});

describe('bedrock rerank', () => {
  const rerank = bedrock.rerank!;

  it('posts to bedrock-agent-runtime /rerank with the foundation-model ARN and top_n', () => {
    const req = rerank.request(
      { model: 'amazon.rerank-v1:0', query: 'capital of France?', documents: ['Paris', { text: 'Berlin', id: 7 }, 'Lyon'], top_n: 2, parameters: { k: 1 } },
      { ...target, aws: { ...creds, region: 'us-west-2' } },
    );
    expect(req.url).toBe('https://bedrock-agent-runtime.us-west-2.amazonaws.com/rerank');
    expect(JSON.parse(req.body as string)).toEqual({
      queries: [{ type: 'TEXT', textQuery: { text: 'capital of France?' } }],
      sources: ['Paris', 'Berlin', 'Lyon'].map((text) => ({ type: 'INLINE', inlineDocumentSource: { type: 'TEXT', textDocument: { text } } })),
      rerankingConfiguration: {
        type: 'BEDROCK_RERANKING_MODEL',
        bedrockRerankingConfiguration: {
          modelConfiguration: { modelArn: 'arn:aws:bedrock:us-west-2::foundation-model/amazon.rerank-v1:0', additionalModelRequestFields: { k: 1 } },
          numberOfResults: 2,
        },
      },
    });
    const arn = 'arn:aws:bedrock:us-west-2::foundation-model/cohere.rerank-v3-5:0';
    const withArn = JSON.parse(rerank.request({ model: arn, query: 'q', documents: ['a'] }, target).body as string);
    expect(withArn.rerankingConfiguration.bedrockRerankingConfiguration).toEqual({ modelConfiguration: { modelArn: arn }, numberOfResults: 1 });
  });

  it('maps results, documents and search units', () => {
    const body = { model: 'amazon.rerank-v1:0', query: 'q', documents: Array.from({ length: 101 }, (_, i) => `doc ${i}`), return_documents: true };
    const out = rerank.response(
      {
        results: [
          { index: 3, relevanceScore: 0.2 },
          { index: 0, relevanceScore: 0.9 },
        ],
      },
      body,
      ctx(),
    );
    expect(out).toEqual({
      object: 'list',
      id: 'chatcmpl-gw1',
      results: [
        { index: 0, relevance_score: 0.9, document: { text: 'doc 0' } },
        { index: 3, relevance_score: 0.2, document: { text: 'doc 3' } },
      ],
      model: 'amazon.rerank-v1:0',
      usage: { search_units: 2 },
      provider: 'bedrock',
    });
  });

  it('rejects empty documents and a missing region', () => {
    expect(gatewayError(() => rerank.request({ model: 'amazon.rerank-v1:0', query: 'q', documents: [] }, target)).param).toBe('documents');
    expect(gatewayError(() => rerank.request({ model: 'amazon.rerank-v1:0', query: 'q', documents: ['a'] }, { provider: 'bedrock', aws: creds })).param).toBe(
      'x-gateway-aws-region',
    );
  });
});
