import type { Readable } from 'node:stream';
import { GatewayError, type ErrorType } from '../shared/errors';
import { reframeOpenAIStream } from '../providers/_shared/openai-compatible';
import type { ChatCompletionChunk, StreamError, StreamTranslator, TranslateContext } from '../providers/types';
import type { StreamFinale, StreamLog } from './streaming';
import { guardedTranslator } from './upstream-body';

/**
 * A ChatStream (chat-core.ts) read as an AsyncIterable of OpenAI chunks, for features that
 * consume a model's answer themselves (the assistants engine). Loaded on first use.
 */

/** Why a stream ended without its answer. */
export type ChatStreamFailure = 'provider_error' | 'interrupted' | 'incomplete' | 'timeout' | 'guardrail' | 'cancelled' | 'internal';

/**
 * Thrown by a ChatStream's iterator instead of a clean end: the provider reported an error
 * mid-stream, the connection broke or went idle, the request timeout ran out, an
 * output guardrail refused the answer, or the consumer cancelled. Its body is the error
 * event the HTTP route sends in the same case.
 */
export class ChatStreamError extends GatewayError {
  constructor(
    readonly reason: ChatStreamFailure,
    status: number,
    type: ErrorType,
    message: string,
    code: string | null,
    extra: Record<string, unknown> = {},
  ) {
    super(status, type, message, null, code, {}, extra);
    this.name = 'ChatStreamError';
  }

  static of(reason: ChatStreamFailure, err: GatewayError): ChatStreamError {
    return new ChatStreamError(reason, err.status, err.type, err.message, err.code, err.extra);
  }
}

const providerError = (e: StreamError) => new ChatStreamError('provider_error', e.status, e.type as ErrorType, e.message, e.code);
const interrupted = (closed: boolean) =>
  new ChatStreamError(
    'interrupted',
    502,
    'upstream_error',
    closed ? 'The provider closed the stream before it was complete.' : 'The provider connection broke before the response was complete.',
    'upstream_stream_interrupted',
  );
const timedOut = () => new ChatStreamError('timeout', 504, 'timeout_error', 'The request timed out after its x-gateway-request-timeout.', 'request_timeout');
const cancelled = () => new ChatStreamError('cancelled', 499, 'server_error', 'client disconnected', 'client_disconnected');
const incomplete = () =>
  new ChatStreamError('incomplete', 502, 'upstream_error', 'The provider stream ended before the answer was complete.', 'upstream_stream_incomplete');
const unfinished = () => new ChatStreamError('internal', 500, 'server_error', 'The gateway failed to finish the stream.', 'internal_error');

/**
 * A GatewayError thrown while reading: the HTTP client destroys the body with one when the
 * request timeout or the idle bound runs out, or the connection breaks mid-body.
 */
function reasonOf(err: GatewayError, phase: 'upstream' | 'finale'): ChatStreamFailure {
  if (err.type === 'guardrail_error') return 'guardrail';
  if (phase === 'finale') return 'internal';
  return err.type === 'timeout_error' ? 'timeout' : 'interrupted';
}

/** What a ChatStream reads from. */
export interface StreamSource {
  upstream: Readable;
  /** Absent: the provider streams OpenAI chunks already. */
  translator?: StreamTranslator;
  /** OpenAI chunks carrying usage the caller did not ask for (the gateway asked, to price the stream): it is left out. */
  hideUsage?: boolean;
  providerName: string;
  ctx: TranslateContext;
  finale?: StreamFinale;
  /** Milliseconds left of the caller's timeout when consumption starts. */
  remainingMs(): number | undefined;
  log: StreamLog;
}

/** The chunks of a stream; failures throw a ChatStreamError, leaving early aborts the upstream. */
export async function* chunks(src: StreamSource, stopped: () => boolean): AsyncGenerator<ChatCompletionChunk, void, undefined> {
  const { upstream, ctx, finale, log } = src;
  // OpenAI chunks end with [DONE]; every translator emits a finish reason when its format's answer ends.
  let sawDone = false;
  const translator =
    src.translator ??
    guardedTranslator(
      reframeOpenAIStream(ctx, src.providerName, () => (sawDone = true)),
      src.providerName,
    );
  let text = '';
  let sawFinish = false;
  let expired = false;
  let settled = false;
  let phase: 'upstream' | 'finale' = 'upstream';
  const remaining = src.remainingMs();
  const timer =
    remaining !== undefined
      ? setTimeout(() => {
          expired = true;
          upstream.destroy();
        }, remaining)
      : undefined;
  function* emit(out: { chunks: ChatCompletionChunk[]; error?: StreamError }): Generator<ChatCompletionChunk> {
    for (const chunk of out.chunks) {
      for (const choice of chunk.choices) {
        if (choice.finish_reason) sawFinish = true;
        if (finale) text += choice.delta.content ?? choice.delta.tool_calls?.map((t) => t.function?.arguments ?? '').join('') ?? '';
      }
      yield chunk;
    }
    log.usage = translator.usage() ?? log.usage;
    if (out.error) throw providerError(out.error);
  }
  try {
    for await (const bytes of upstream as AsyncIterable<Buffer>) yield* emit(translator.push(bytes));
    yield* emit(translator.end());
    if (!sawDone && !sawFinish) throw incomplete();
    if (!sawDone && !src.translator) log.streamError = 'provider stream ended without [DONE]';
    phase = 'finale';
    const last = finale ? await finale(text) : undefined;
    settled = true;
    if (last) yield last;
  } catch (err) {
    settled = true;
    const failure =
      err instanceof ChatStreamError
        ? err
        : stopped()
          ? cancelled()
          : expired
            ? timedOut()
            : err instanceof GatewayError
              ? ChatStreamError.of(reasonOf(err, phase), err)
              : phase === 'finale'
                ? unfinished()
                : interrupted((err as { code?: string }).code === 'ERR_STREAM_PREMATURE_CLOSE');
    log.streamError = failure.message;
    throw failure;
  } finally {
    clearTimeout(timer);
    // Leaving early (break, return) is the consumer going away: stop paying for tokens.
    if (!settled) log.streamError = 'client disconnected';
    if (!upstream.destroyed) upstream.destroy();
  }
}
