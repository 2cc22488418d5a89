/**
 * Fake AWS Bedrock runtime and agent-runtime.
 *
 * - POST /model/{modelId}/converse         JSON ConverseResponse
 * - POST /model/{modelId}/converse-stream  `application/vnd.amazon.eventstream` frames:
 *     messageStart, [contentBlockStart (tool use)], contentBlockDelta…, contentBlockStop,
 *     messageStop, metadata (usage); every payload carries a `p` padding field. An in-stream
 *     error is a frame with `:message-type: exception` and `:exception-type`.
 * - POST /model/{modelId}/invoke           InvokeModel, embeddings only: Titan `{inputText}` and
 *                                          Cohere `{texts, input_type}` bodies
 * - POST /model/{modelId}/count-tokens     CountTokens of a Converse input (`{input: {converse}}`):
 *                                          `{inputTokens}` = the conversation's word count plus
 *                                          one per tool; a foundation model id only (an
 *                                          inference profile such as `us.…` is refused, as there)
 * - POST /rerank                           bedrock-agent-runtime Rerank
 * The modelId is recorded percent-decoded in `rec.model` / `rec.params.modelId`.
 * Auth: SigV4 `authorization: AWS4-HMAC-SHA256 Credential=…/bedrock/aws4_request, …` plus
 * `x-amz-date`, else 403 InvalidSignatureException. With `credentials` the signature itself
 * is recomputed (catches the double-encoded path gotcha). `acceptBearer` also lets Bedrock
 * API keys (`Authorization: Bearer`) through.
 */
import { EventStreamCodec, type Message, type MessageHeaders } from '@smithy/eventstream-codec';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { answer, embed, promptTokens, rank, wordCount, type Conversation, type Turn } from './answer';
import { TOOL_PREAMBLE } from './anthropic';
import {
  arr,
  bearer,
  obj,
  startFake,
  str,
  type ErrorShaper,
  type Exchange,
  type FakeOptions,
  type FakeServer,
  type Frame,
  type RecordedRequest,
} from './behaviour';

export interface BedrockFakeOptions extends FakeOptions {
  /** Verify the SigV4 signature with these credentials (otherwise only its shape is checked). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Also accept `Authorization: Bearer <key>` (Bedrock API keys). */
  acceptBearer?: boolean;
}

const EXCEPTIONS: Record<number, string> = {
  400: 'ValidationException',
  403: 'AccessDeniedException',
  404: 'ResourceNotFoundException',
  408: 'ModelTimeoutException',
  424: 'ModelErrorException',
  429: 'ThrottlingException',
  500: 'InternalServerException',
  503: 'ServiceUnavailableException',
};

export const bedrockError: ErrorShaper = (status, message, type) => {
  const name = type ?? EXCEPTIONS[status] ?? (status >= 500 ? 'InternalServerException' : 'ValidationException');
  return {
    body: name === 'ModelErrorException' ? { message, originalStatusCode: 500 } : { message },
    headers: { 'x-amzn-errortype': `${name}:http://internal.amazon.com/coral/com.amazon.bedrock/` },
  };
};

/** utf8 codecs for EventStreamCodec (same contract as @smithy/util-utf8's toUtf8/fromUtf8). */
export const toUtf8 = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
export const fromUtf8 = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'utf8'));
export const eventStreamCodec = new EventStreamCodec(toUtf8, fromUtf8);

/** Split a whole event-stream body into frames and decode each (for tests). */
export function decodeEventStream(bytes: Uint8Array): Array<Message & { json: Record<string, unknown> }> {
  const out: Array<Message & { json: Record<string, unknown> }> = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = 0; at + 4 <= bytes.byteLength; ) {
    const total = view.getUint32(at);
    const msg = eventStreamCodec.decode(bytes.subarray(at, at + total));
    out.push({ ...msg, json: JSON.parse(toUtf8(msg.body)) as Record<string, unknown> });
    at += total;
  }
  return out;
}

const PAD = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** One `:message-type: event` frame. */
export function eventFrame(eventType: string, payload: Record<string, unknown>, n = 0): Uint8Array {
  const headers: MessageHeaders = {
    ':event-type': { type: 'string', value: eventType },
    ':content-type': { type: 'string', value: 'application/json' },
    ':message-type': { type: 'string', value: 'event' },
  };
  const body = { ...payload, p: PAD.slice(0, 4 + ((n * 7) % (PAD.length - 4))) };
  return eventStreamCodec.encode({ headers, body: fromUtf8(JSON.stringify(body)) });
}

/** One `:message-type: exception` frame (e.g. `throttlingException`). */
export function exceptionFrame(exceptionType: string, message: string): Uint8Array {
  const headers: MessageHeaders = {
    ':exception-type': { type: 'string', value: exceptionType },
    ':content-type': { type: 'string', value: 'application/json' },
    ':message-type': { type: 'string', value: 'exception' },
  };
  const body = exceptionType === 'modelStreamErrorException' ? { message, originalStatusCode: 500 } : { message };
  return eventStreamCodec.encode({ headers, body: fromUtf8(JSON.stringify(body)) });
}

export function startBedrockFake(options: BedrockFakeOptions = {}): Promise<FakeServer> {
  return startFake('bedrock', options, bedrockError, (ex) => handle(ex, options));
}

const SIGV4 = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request,\s*SignedHeaders=([^,]+),\s*Signature=([0-9a-f]{64})$/;
const BAD_SIGNATURE =
  'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.';

/** Returns an error message when the request is not acceptably signed. */
async function checkAuth(rec: RecordedRequest, options: BedrockFakeOptions): Promise<string | undefined> {
  const auth = rec.headers.authorization ?? '';
  if (options.acceptBearer && bearer(rec)) return options.apiKey === undefined || bearer(rec) === options.apiKey ? undefined : 'Invalid API key';
  if (!auth.startsWith('AWS4-HMAC-SHA256 Credential=')) return 'Missing Authentication Token';
  const amzDate = rec.headers['x-amz-date'];
  if (!amzDate || !/^\d{8}T\d{6}Z$/.test(amzDate)) return "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.";
  const m = SIGV4.exec(auth);
  if (!m) return `Authorization header is malformed: ${auth.slice(0, 40)}…`;
  const [, accessKeyId, , region, service, signedList, signature] = m;
  if (service !== 'bedrock') return `Credential should be scoped to correct service: 'bedrock'.`;
  if (!options.credentials) return undefined;
  if (accessKeyId !== options.credentials.accessKeyId) return 'The security token included in the request is invalid.';
  const signed = signedList!.split(';');
  const headers: Record<string, string> = {};
  for (const h of signed) headers[h] = rec.headers[h] ?? '';
  const token = signed.includes('x-amz-security-token') ? rec.headers['x-amz-security-token'] : undefined;
  const signer = new SignatureV4({
    credentials: { accessKeyId: accessKeyId!, secretAccessKey: options.credentials.secretAccessKey, sessionToken: token },
    region: region!,
    service: service!,
    sha256: Hash.bind(null, 'sha256'),
    // Recompute over exactly the signed headers; adding a content hash would change them.
    applyChecksum: false,
  });
  const signingDate = new Date(amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'));
  const expected = await signer.sign(
    { method: rec.method, protocol: 'http:', hostname: '127.0.0.1', path: rec.path, query: rec.query, headers, body: rec.rawBody },
    { signingDate, signableHeaders: new Set(signed) },
  );
  const got = /Signature=([0-9a-f]+)/.exec(expected.headers.authorization ?? '')?.[1];
  return got === signature ? undefined : BAD_SIGNATURE;
}

const MODEL_PATH = /^\/model\/([^/]+)\/(converse|converse-stream|invoke|count-tokens)$/;

async function handle(ex: Exchange, options: BedrockFakeOptions): Promise<void> {
  const { rec } = ex;
  const problem = await checkAuth(rec, options);
  if (problem) return ex.error(403, problem, 'InvalidSignatureException');
  const m = MODEL_PATH.exec(rec.path);
  if (rec.method === 'POST' && m) {
    const modelId = decodeURIComponent(m[1]!);
    rec.params.modelId = modelId;
    if (m[2] === 'invoke') return invokeEmbed(ex, modelId);
    if (m[2] === 'count-tokens') return countTokens(ex, modelId);
    return converse(ex, modelId, m[2] === 'converse-stream');
  }
  if (rec.method === 'POST' && rec.path === '/rerank') return rerankRoute(ex);
  if (rec.method === 'GET' && rec.path === '/foundation-models') return foundationModels(ex);
  if (!(await ex.begin(undefined, false))) return;
  return ex.error(404, `Unknown operation: ${rec.method} ${rec.path}`, 'UnknownOperationException');
}

/** Converse request -> the fakes' conversation (toolResult blocks become tool turns). */
export function bedrockConversation(body: Record<string, unknown>, model: string): Conversation {
  const turns: Turn[] = [];
  for (const s of arr(body.system)) {
    const text = str(obj(s).text);
    if (text !== undefined) turns.push({ role: 'system', text });
  }
  for (const m of arr(body.messages)) {
    const msg = obj(m);
    const role = msg.role === 'assistant' ? 'assistant' : 'user';
    for (const b of arr(msg.content)) {
      const block = obj(b);
      if (typeof block.text === 'string') turns.push({ role, text: block.text });
      else if (block.toolUse !== undefined) {
        const use = obj(block.toolUse);
        turns.push({ role: 'assistant', text: `${str(use.name)}(${JSON.stringify(use.input)})` });
      } else if (block.toolResult !== undefined) {
        const text = arr(obj(block.toolResult).content)
          .map((c) => str(obj(c).text) ?? JSON.stringify(obj(c).json ?? c))
          .join(' ');
        turns.push({ role: 'tool', text });
      }
    }
  }
  const toolConfig = obj(body.toolConfig);
  const tools = arr(toolConfig.tools)
    .map((t) => str(obj(obj(t).toolSpec).name))
    .filter((n): n is string => n !== undefined);
  const choice = obj(toolConfig.toolChoice);
  const forceTool = choice.any !== undefined ? '' : str(obj(choice.tool).name);
  const max = obj(body.inferenceConfig).maxTokens;
  const toolSchemas = Object.fromEntries(arr(toolConfig.tools).map((t) => [str(obj(obj(t).toolSpec).name) ?? '', obj(obj(obj(t).toolSpec).inputSchema).json]));
  return { model, turns, tools, forceTool, maxTokens: typeof max === 'number' ? max : undefined, toolSchemas };
}

async function converse(ex: Exchange, modelId: string, stream: boolean): Promise<void> {
  if (!(await ex.begin(modelId, stream))) return;
  const body = obj(ex.rec.body);
  const messages = arr(body.messages).map(obj);
  if (messages.length === 0) return ex.error(400, 'The model returned the following errors: messages: at least one message is required');
  for (const [i, msg] of messages.entries()) {
    if (msg.role !== 'user' && msg.role !== 'assistant')
      return ex.error(
        400,
        `1 validation error detected: Value '${String(msg.role)}' at 'messages.${i + 1}.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]`,
      );
    if (i === 0 && msg.role !== 'user')
      return ex.error(400, 'A conversation must start with a user message. Try again with a conversation that starts with a user message.');
    if (i > 0 && msg.role === messages[i - 1]!.role) {
      return ex.error(
        400,
        'A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.',
      );
    }
  }
  const conv = bedrockConversation(body, modelId);
  const a = answer(conv);
  const inputTokens = promptTokens(conv);
  // Converse counts cache reads and writes apart from inputTokens (and in totalTokens).
  const { read = 0, write = 0 } = ex.knobs.promptCache ?? {};
  const usage = {
    inputTokens,
    outputTokens: a.completionTokens,
    totalTokens: inputTokens + read + write + a.completionTokens,
    ...(ex.knobs.promptCache ? { cacheReadInputTokens: read, cacheWriteInputTokens: write } : {}),
  };
  const stopReason = a.kind === 'tool' ? 'tool_use' : a.finish === 'length' ? 'max_tokens' : 'end_turn';
  const toolUseId = a.kind === 'tool' ? `tooluse_${a.idSuffix}` : '';
  const headers = { 'x-amzn-requestid': `fake-${ex.rec.seq}` };

  // A forced tool call (toolChoice any / tool) comes without a text preamble, as on the real API.
  const withText = a.kind === 'text' || conv.forceTool === undefined;
  if (!stream) {
    const content: unknown[] = withText ? [{ text: a.kind === 'text' ? a.text : TOOL_PREAMBLE }] : [];
    if (a.kind === 'tool') content.push({ toolUse: { toolUseId, name: a.name, input: a.args } });
    return ex.json(200, { output: { message: { role: 'assistant', content } }, stopReason, usage, metrics: { latencyMs: 1 } }, headers);
  }

  let n = 0;
  const ev = (type: string, payload: Record<string, unknown>) => eventFrame(type, payload, n++);
  const frames: Frame[] = [ev('messageStart', { role: 'assistant' })];
  if (withText) {
    const pieces = a.kind === 'text' ? a.pieces : TOOL_PREAMBLE.match(/\S+\s*/g)!;
    for (const p of pieces) frames.push(ev('contentBlockDelta', { contentBlockIndex: 0, delta: { text: p } }));
    frames.push(ev('contentBlockStop', { contentBlockIndex: 0 }));
  }
  if (a.kind === 'tool') {
    const index = withText ? 1 : 0;
    frames.push(ev('contentBlockStart', { contentBlockIndex: index, start: { toolUse: { toolUseId, name: a.name } } }));
    for (const f of a.fragments) frames.push(ev('contentBlockDelta', { contentBlockIndex: index, delta: { toolUse: { input: f } } }));
    frames.push(ev('contentBlockStop', { contentBlockIndex: index }));
  }
  frames.push(ev('messageStop', { stopReason }), ev('metadata', { usage, metrics: { latencyMs: 1 } }));
  await ex.stream('application/vnd.amazon.eventstream', frames, {
    headers,
    errorFrame: (type, message) => exceptionFrame(type ?? 'internalServerException', message),
  });
}

const INFERENCE_PROFILE = /^(?:us|eu|apac|au|ca|jp|global)\./;

async function countTokens(ex: Exchange, modelId: string): Promise<void> {
  if (!(await ex.begin(modelId, false))) return;
  if (INFERENCE_PROFILE.test(modelId)) return ex.error(400, 'The provided model identifier is invalid.');
  const input = obj(obj(ex.rec.body).input);
  if (input.invokeModel !== undefined) return ex.error(400, 'This fake counts Converse inputs only.');
  if (input.converse === undefined) return ex.error(400, "1 validation error detected: Value at 'input' failed to satisfy constraint: Member must not be null");
  const converse = obj(input.converse);
  if (arr(converse.messages).length === 0) return ex.error(400, 'The model returned the following errors: messages: at least one message is required');
  const conv = bedrockConversation(converse, modelId);
  ex.json(200, { inputTokens: promptTokens(conv) + conv.tools.length }, { 'x-amzn-requestid': `fake-${ex.rec.seq}` });
}

async function rerankRoute(ex: Exchange): Promise<void> {
  const body = obj(ex.rec.body);
  const config = obj(obj(body.rerankingConfiguration).bedrockRerankingConfiguration);
  const modelArn = str(obj(config.modelConfiguration).modelArn);
  if (!(await ex.begin(modelArn, false))) return;
  const queries = arr(body.queries);
  const sources = arr(body.sources);
  if (queries.length !== 1)
    return ex.error(400, `1 validation error detected: Value at 'queries' failed to satisfy constraint: Member must have length equal to 1`);
  if (sources.length === 0)
    return ex.error(400, `1 validation error detected: Value at 'sources' failed to satisfy constraint: Member must have length greater than or equal to 1`);
  if (!modelArn) return ex.error(400, 'rerankingConfiguration.bedrockRerankingConfiguration.modelConfiguration.modelArn is required');
  const query = str(obj(obj(queries[0]).textQuery).text) ?? '';
  const docs = sources.map((s) => {
    const src = obj(obj(s).inlineDocumentSource);
    return str(obj(src.textDocument).text) ?? JSON.stringify(src.jsonDocument ?? {});
  });
  const n = typeof config.numberOfResults === 'number' ? config.numberOfResults : undefined;
  const results = rank(query, docs, n).map((r) => ({ index: r.index, relevanceScore: r.score }));
  ex.json(200, { results }, { 'x-amzn-requestid': `fake-${ex.rec.seq}` });
}

/** InvokeModel for the two embedding body families (Titan, Cohere). */
async function invokeEmbed(ex: Exchange, modelId: string): Promise<void> {
  if (!(await ex.begin(modelId, false))) return;
  const body = obj(ex.rec.body);
  const headers = { 'x-amzn-requestid': `fake-${ex.rec.seq}` };
  const size = (v: unknown) => (typeof v === 'number' ? v : 8);
  const inputText = str(body.inputText);
  if (inputText !== undefined) {
    return ex.json(200, { embedding: embed(inputText, size(body.dimensions)), inputTextTokenCount: wordCount(inputText) }, headers);
  }
  const texts = arr(body.texts).map(String);
  if (texts.length && str(body.input_type)) {
    const vectors = texts.map((t) => embed(t, size(body.output_dimension)));
    const byType = arr(body.embedding_types).length > 0;
    return ex.json(
      200,
      {
        id: `fake-embed-${ex.rec.seq}`,
        texts,
        response_type: byType ? 'embeddings_by_type' : 'embeddings_floats',
        embeddings: byType ? { float: vectors } : vectors,
      },
      headers,
    );
  }
  return ex.error(400, 'Malformed input request, please reformat your input and try again.');
}

export const FAKE_BEDROCK_MODELS = [
  { modelId: 'anthropic.claude-3-5-sonnet-20240620-v1:0', providerName: 'Anthropic' },
  { modelId: 'amazon.titan-embed-text-v2:0', providerName: 'Amazon' },
];

/** GET /foundation-models (the bedrock control plane's ListFoundationModels). */
async function foundationModels(ex: Exchange): Promise<void> {
  if (!(await ex.begin(undefined, false))) return;
  ex.json(200, {
    modelSummaries: FAKE_BEDROCK_MODELS.map((m) => ({
      ...m,
      modelArn: `arn:aws:bedrock:us-east-1::foundation-model/${m.modelId}`,
      modelName: m.modelId,
      inputModalities: ['TEXT'],
      outputModalities: ['TEXT'],
      responseStreamingSupported: true,
    })),
  });
}
