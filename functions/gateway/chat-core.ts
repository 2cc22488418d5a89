import { badRequest, type GatewayError } from '../shared/errors';
import type { SseWriter } from '../shared/http/sse';
import type { CallerRequest } from '../shared/http/types';
import { newId } from '../shared/ids';
import { loadOnce } from '../shared/load-once';
import { reframeOpenAIStream } from '../providers/_shared/openai-compatible';
import type { ChatAdapter, ChatCompletion, ChatCompletionChunk, ChatRequest, TranslateContext } from '../providers/types';
import { ChatGuardrails, completionText } from './guardrails';
import { dispatch, gatewayHeaders, withOverrides, type Dispatched } from './pipeline';
import type { RequestFacts } from '../spend/request-record';
import { succeeded, translatedJson } from './responses';
import type { ResolvedTarget } from './target';
import type { UpstreamOutcome } from './routing';
import type { StreamSource } from './chat-stream';
import { checkEventStream } from './stream-check';
import { guardedTranslator, readableCompletion, translateUpstream } from './upstream-body';
import { passThroughStream, translatedStream, type StreamFinale } from './streaming';

/**
 * The chat core: one chat completion through routing, limits, guardrails and translation,
 * as values, not HTTP. The `/v1/chat/completions` route (chat.ts) turns the outcome into a
 * response; assistants and prompts call it directly.
 */

export interface ChatCallInput {
  /**
   * Who calls and how to route: workspace, organisation and key (limits, logs), the
   * provider headers (`x-gateway-provider`, config, ...), trace id and request context.
   * A feature calling on its own behalf builds one (the assistants engine's request).
   */
  req: CallerRequest;
  body: ChatRequest;
  /**
   * The request's log record. chatCall merges what dispatch learnt once; a stream adds
   * its usage and its error (if any) when it ends, after chatCall has returned.
   */
  log: RequestFacts;
}

export type ChatOutcome = ChatFailure | ChatCompleted | ChatStreamed;

/** The routed call did not succeed: a gateway error, or the provider's answer to pass through unchanged. */
export interface ChatFailure {
  kind: 'failure';
  status: number;
  /** Network, timeout or blocked host, in the gateway's error shape. */
  error?: GatewayError;
  /** The provider's own status, headers and body, unread. */
  upstream?: UpstreamOutcome;
  dispatched: Dispatched;
}

/** A non-streamed answer: translated, output guardrails applied, `hook_results` attached when any ran. */
export interface ChatCompleted {
  kind: 'completion';
  /** 200, or 246 when a non-blocking guardrail failed. */
  status: number;
  /** Gateway and rate-limit headers of the answer. */
  headers: Record<string, string>;
  completion: ChatCompletion & { hook_results?: unknown };
}

export interface ChatStreamed {
  kind: 'stream';
  status: number;
  headers: Record<string, string>;
  stream: ChatStream;
}

/**
 * A streamed answer, consumed once, one of two ways: as an AsyncIterable of translated
 * chunks (features), or as an SSE body (the HTTP route), which keeps the hot path push-based
 * with backpressure and passes OpenAI bytes through untouched.
 */
/** The iterator lives in its own module: the HTTP route never iterates, so its cold start does not load it. */
const chatStream = /* @__PURE__ */ loadOnce(() => import('./chat-stream'));
async function* iterate(src: StreamSource, stopped: () => boolean): AsyncGenerator<ChatCompletionChunk, void, undefined> {
  const { chunks } = await chatStream();
  yield* chunks(src, stopped);
}

export class ChatStream implements AsyncIterable<ChatCompletionChunk> {
  private claimed = false;
  private stopped = false;

  constructor(private readonly src: StreamSource) {}

  /** The SSE body of the HTTP route: `data:` frames, error events and `data: [DONE]`. */
  sse(): SseWriter {
    this.claim();
    const { upstream, translator, finale, log, ctx, providerName } = this.src;
    const remaining = this.src.remainingMs();
    if (translator) return translatedStream(upstream, translator, log, remaining, finale);
    if (!finale) return passThroughStream(upstream, log, remaining, this.src.hideUsage);
    // Output guardrails need the text, so OpenAI chunks are parsed and re-sent then.
    let sawDone = false;
    const reframed = guardedTranslator(
      reframeOpenAIStream(ctx, providerName, () => (sawDone = true)),
      providerName,
    );
    return translatedStream(upstream, reframed, log, remaining, finale, () => sawDone);
  }

  /** Stop reading: the upstream request is aborted, a pending `next()` throws a `cancelled` ChatStreamError (chat-stream.ts). */
  cancel(): void {
    this.stopped = true;
    this.src.upstream.destroy();
  }

  [Symbol.asyncIterator](): AsyncIterator<ChatCompletionChunk> {
    this.claim();
    return iterate(this.src, () => this.stopped);
  }

  private claim(): void {
    if (this.claimed) throw new Error('A chat stream can be consumed once.');
    this.claimed = true;
  }
}

/** Ask a provider that streams usage only on request for it (pricing needs it); the stream hides it again. */
function withStreamUsage(body: ChatRequest, chat: ChatAdapter): ChatRequest {
  if (!chat.streamUsageOnRequest || body.stream_options?.include_usage === true) return body;
  return { ...body, stream_options: { ...body.stream_options, include_usage: true } };
}

/** Run one chat completion: routing, limits, input and output guardrails, translation. */
export async function chatCall({ req, body, log }: ChatCallInput): Promise<ChatOutcome> {
  const stream = body.stream === true;
  log.stream = stream;
  let effective: ChatRequest = body;
  const guards = new ChatGuardrails(req, log);
  const id = newId('chatcmpl-');
  const created = Math.floor(Date.now() / 1000);
  const ctxNow = (): TranslateContext => ({ model: effective.model, id, created, includeUsage: effective.stream_options?.include_usage === true });
  const translate = (json: unknown, { adapter }: ResolvedTarget): ChatCompletion =>
    translateUpstream(adapter.slug, () => readableCompletion(adapter.chat!.response(json, ctxNow())));
  const d = await dispatch({
    req,
    log,
    model: body.model,
    cacheRoute: 'chat.completions',
    readsJson: !stream,
    translateJson: stream ? undefined : translate,
    params: body,
    async beforeAttempt({ adapter }, leaf) {
      if (!adapter.chat) throw badRequest(`Provider '${adapter.slug}' does not support chat completions.`, 'x-gateway-provider', 'unsupported_operation');
      effective = withOverrides(body, leaf);
      if (!effective.model) throw badRequest('`model` is required (in the body or the config override_params).', 'model', 'missing_model');
      effective = await guards.checkInput(leaf, effective);
    },
    build: ({ adapter, target }) => adapter.chat!.request(stream ? withStreamUsage(effective, adapter.chat!) : effective, target),
    accept: stream ? ({ body, headers }, { adapter }) => checkEventStream(body, headers, adapter.slug) : undefined,
  });
  Object.assign(log, d.facts, { model: effective.model });
  if (!succeeded(d)) {
    const { error, response } = d.routing.result;
    return { kind: 'failure', status: error ? error.status : response!.status, error, upstream: response, dispatched: d };
  }

  const chat = d.resolved.adapter.chat!;
  const ctx = ctxNow();
  const leaf = d.routing.leaf;
  const headers = gatewayHeaders(d);
  if (stream) {
    const checksOutput = Boolean(leaf.node.output_guardrails?.length);
    const finale: StreamFinale | undefined =
      checksOutput || guards.ran
        ? async (text) => {
            await guards.checkOutput(leaf, text, ctx.model);
            return { id: ctx.id, object: 'chat.completion.chunk', created: ctx.created, model: ctx.model, choices: [], hook_results: guards.hookResults() };
          }
        : undefined;
    const source: StreamSource = {
      upstream: d.routing.result.response!.body,
      translator: chat.stream ? guardedTranslator(chat.stream(ctx), d.resolved.adapter.slug) : undefined,
      hideUsage: Boolean(chat.streamUsageOnRequest) && !ctx.includeUsage,
      providerName: d.resolved.adapter.name,
      ctx,
      finale,
      remainingMs: d.remainingMs,
      log,
    };
    return { kind: 'stream', status: guards.status(), headers, stream: new ChatStream(source) };
  }
  const completion = await translatedJson(d, translate);
  log.usage = completion.usage;
  await guards.checkOutput(leaf, completionText(completion), ctx.model);
  return { kind: 'completion', status: guards.status(), headers, completion: guards.ran ? { ...completion, hook_results: guards.hookResults() } : completion };
}
