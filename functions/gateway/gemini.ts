/**
 * The Google Gemini API (v1beta) on every provider that has chat or embeddings:
 * `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent?alt=sse`,
 * `:countTokens`, `:embedContent` and `:batchEmbedContents`. Loaded on first use (handler.ts).
 *
 * Content generation is translated into a chat request and run by the chat core (routing,
 * retries, fallback, limits, guardrails, cache, request log); the answer comes back as a
 * GenerateContentResponse or its SSE events. Embeddings run the embeddings call. The model
 * in the path is the model sent to the target. Every error of these routes is in Google's
 * shape (`{error:{code,message,status}}`), the kernel's own (authentication) included.
 */
import { Readable } from 'node:stream';
import { asGatewayError, badRequest, notFound } from '../shared/errors';
import { json, mergeHeaders } from '../shared/http/response';
import { SSE_HEADERS } from '../shared/http/sse';
import { compose } from '../shared/http/middleware';
import { idempotency } from '../shared/http/idempotency';
import type { GatewayRequest, HttpResponse, Middleware } from '../shared/http/types';
import { newId } from '../shared/ids';
import { log as logger } from '../shared/telemetry/logger';
import { parseInput } from '../shared/validation';
import type { ChatCompletion, ChatCompletionChunk, ChatRequest, EmbeddingsRequest } from '../providers/types';
import { encodeChunks } from '../formats/encode';
import { geminiToChat } from '../formats/gemini/request';
import { chatToGemini } from '../formats/gemini/response';
import {
  batchEmbedContentsSchema,
  countTokensSchema,
  embedContentSchema,
  generateContentSchema,
  type EmbedContentRequest,
  type GenerateContentRequest,
} from '../formats/gemini/schema';
import { geminiFrame, GeminiStreamEncoder, type GeminiStreamEvent } from '../formats/gemini/stream';
import { chatCall, type ChatFailure } from './chat-core';
import { embeddingsCall, type EmbeddingsOutcome } from './embeddings';
import { gatewayHeaders } from './pipeline';
import { requestFacts, requestLog } from './request-log';
import { countGeminiTokens, reachesGoogleOnly } from './gemini-count';
import { googleError, providerFailure } from './gemini-failure';

/** Middleware: any error the rest of the route throws is answered in Google's shape. */
const googleErrors: Middleware = async (req, next) => {
  try {
    return await next();
  } catch (err) {
    const error = asGatewayError(err);
    if (error.status >= 500) logger.error('request failed', { route: 'gemini', error: err instanceof Error ? err.message : String(err) }, req.context);
    return googleError(error);
  }
};

const failureResponse = (failure: ChatFailure | Extract<EmbeddingsOutcome, { ok: false }>) =>
  providerFailure('dispatched' in failure ? failure.dispatched : failure.d);

/** `{model}:{action}` of the path; a model id may hold `/`, `.` and `:` (only the last `:` splits). */
function modelAction(req: GatewayRequest): { model: string; action: string } {
  const rest = req.params.proxy ?? '';
  const colon = rest.lastIndexOf(':');
  if (colon <= 0)
    throw notFound(
      `Unknown Gemini method: POST ${req.path}. Use models/{model}:generateContent, :streamGenerateContent, :countTokens, :embedContent or :batchEmbedContents.`,
    );
  return { model: rest.slice(0, colon), action: rest.slice(colon + 1) };
}

/** `safetySettings` go on to Google (the Gemini adapter sends `safety_settings` as they are); other providers have no equivalent. */
async function withSafetySettings(req: GatewayRequest, body: GenerateContentRequest, chat: ChatRequest): Promise<ChatRequest> {
  if (!body.safetySettings?.length || !(await reachesGoogleOnly(req))) return chat;
  return { ...chat, safety_settings: body.safetySettings };
}

/** The answer's events as SSE (`alt=sse`) or, as Google answers without it, one JSON array streamed element by element. */
function streamBody(encoder: GeminiStreamEncoder, chunks: AsyncIterable<ChatCompletionChunk>, sse: boolean): AsyncIterable<string> {
  if (sse) return encodeChunks(encoder, chunks, geminiFrame);
  let opened = false;
  const element = (event: GeminiStreamEvent) => {
    const text = `${opened ? ',\r\n' : '['}${JSON.stringify(event)}`;
    opened = true;
    return text;
  };
  return (async function* () {
    yield* encodeChunks(encoder, chunks, element);
    yield opened ? ']' : '[]';
  })();
}

async function generate(req: GatewayRequest, model: string, stream: boolean): Promise<HttpResponse> {
  const log = requestFacts(req);
  const body = parseInput(generateContentSchema, req.json());
  const chat = await withSafetySettings(req, body, geminiToChat(body, model, stream));
  const outcome = await chatCall({ req, body: chat, log });
  const ctx = { model, responseId: newId('resp_') };
  switch (outcome.kind) {
    case 'failure':
      return failureResponse(outcome);
    case 'completion': {
      const { hook_results, ...completion } = outcome.completion;
      const answer = chatToGemini(completion as ChatCompletion, ctx);
      return json(outcome.status, hook_results ? { ...answer, hook_results } : answer, outcome.headers);
    }
    case 'stream': {
      // Events go out as they are produced; a caller going away aborts the provider call at once.
      const sse = req.query.alt === 'sse';
      const frames = Readable.from(streamBody(new GeminiStreamEncoder(ctx), outcome.stream, sse), { objectMode: false });
      frames.once('close', () => {
        if (!frames.readableEnded) outcome.stream.cancel();
      });
      return { statusCode: outcome.status, headers: mergeHeaders(sse ? SSE_HEADERS : { 'content-type': 'application/json' }, outcome.headers), body: frames };
    }
  }
}

/** The text of an embed request's parts (Gemini embeds text; parts are one passage, joined by a space). */
function embedText(request: EmbedContentRequest, where: string): string {
  return request.content.parts
    .map((part, j) => {
      if (typeof part.text !== 'string')
        throw badRequest(`${where}.parts[${j}] must be a text part: only text can be embedded.`, `${where}.parts[${j}]`, 'unsupported_value');
      return part.text;
    })
    .join(' ');
}

async function embed(req: GatewayRequest, model: string, batch: boolean): Promise<HttpResponse> {
  const requests = batch ? parseInput(batchEmbedContentsSchema, req.json()).requests : [parseInput(embedContentSchema, req.json())];
  const dimensions = requests[0]!.outputDimensionality;
  requests.forEach((r, i) => {
    if (r.outputDimensionality !== dimensions)
      throw badRequest('Every request of a batch must ask for the same outputDimensionality.', `requests[${i}].outputDimensionality`, 'invalid_value');
  });
  const input = requests.map((r, i) => embedText(r, batch ? `requests[${i}].content` : 'content'));
  const body: EmbeddingsRequest = { model, input: batch ? input : input[0]!, ...(dimensions ? { dimensions } : {}) };
  const outcome = await embeddingsCall(req, requestFacts(req), body);
  if (!outcome.ok) return failureResponse(outcome);
  const vectors = outcome.out.data.map((d) => ({ values: d.embedding as number[] }));
  return json(200, batch ? { embeddings: vectors } : { embedding: vectors[0] }, gatewayHeaders(outcome.d));
}

async function countTokens(req: GatewayRequest, model: string): Promise<HttpResponse> {
  const body = parseInput(countTokensSchema, req.json());
  const request = body.generateContentRequest ?? (body.contents?.length ? { contents: body.contents } : undefined);
  if (!request) throw badRequest('countTokens needs `contents` or `generateContentRequest`.', 'contents', 'missing_field');
  return countGeminiTokens(
    req,
    geminiToChat(parseInput(generateContentSchema, request, body.generateContentRequest ? 'generateContentRequest' : ''), model, false),
  );
}

type Action = (req: GatewayRequest, model: string) => Promise<HttpResponse>;
const action = (route: string, run: Action, ...more: Middleware[]) => compose([requestLog(route), ...more], (req) => run(req, modelAction(req).model));

const ACTIONS: Record<string, (req: GatewayRequest) => Promise<HttpResponse>> = {
  generateContent: action('gemini.generate_content', (req, model) => generate(req, model, false), idempotency),
  streamGenerateContent: action('gemini.stream_generate_content', (req, model) => generate(req, model, true), idempotency),
  countTokens: action('gemini.count_tokens', countTokens),
  embedContent: action('gemini.embed_content', (req, model) => embed(req, model, false), idempotency),
  batchEmbedContents: action('gemini.batch_embed_contents', (req, model) => embed(req, model, true), idempotency),
};

/**
 * `POST /v1beta/models/{model}:{action}`. With `x-gateway-api-key` sent, `x-goog-api-key`
 * is the provider's key, which is where Google clients put it; the gateway reads a provider
 * key from `Authorization`, so it moves there.
 */
export const geminiModels = compose([googleErrors], async (sent) => {
  const { headers } = sent;
  const req =
    headers['x-gateway-api-key'] && headers['x-goog-api-key'] && !headers.authorization
      ? { ...sent, headers: { ...headers, authorization: `Bearer ${headers['x-goog-api-key']}` } }
      : sent;
  const run = ACTIONS[modelAction(req).action];
  if (!run)
    throw notFound(
      `Unknown Gemini method ':${modelAction(req).action}'. Use :generateContent, :streamGenerateContent, :countTokens, :embedContent or :batchEmbedContents.`,
    );
  return run(req);
});
