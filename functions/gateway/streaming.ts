import type { Readable } from 'node:stream';
import { createParser } from 'eventsource-parser';
import { GatewayError, type ErrorBody } from '../shared/errors';
import { SseWriter } from '../shared/http/sse';
import type { ChatCompletionChunk, StreamError, StreamTranslator, Usage } from '../providers/types';
import type { RequestFacts } from './request-log';

/** What a stream learns after its response has started: the request log's one sink for it. */
export type StreamLog = Pick<RequestFacts, 'usage' | 'streamError'>;

const errorBody = (message: string, type: string, code: string | null): ErrorBody => ({
  error: { message, type, param: null, code },
});

interface RelayHooks {
  /** Bytes from upstream; return false to stop (an in-stream error was reported). */
  onData(chunk: Buffer): boolean;
  /** Upstream ended cleanly. */
  onEnd(): void | Promise<void>;
}

/**
 * Pump an upstream body into an SSE writer with backpressure. The caller leaving aborts
 * the upstream request; an upstream cut or the caller's timeout ends the stream with an
 * error event, never with a clean-looking end.
 */
function relay(upstream: Readable, sse: SseWriter, facts: StreamLog, remainingMs: number | undefined, hooks: RelayHooks): void {
  let settled = false;
  const fail = (body: ErrorBody) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    facts.streamError = body.error.message;
    sse.error(body);
    sse.end();
    upstream.destroy();
  };
  const timer =
    remainingMs !== undefined
      ? setTimeout(() => fail(errorBody(`The request timed out after its x-gateway-request-timeout.`, 'timeout_error', 'request_timeout')), remainingMs)
      : undefined;
  sse.stream.on('close', () => {
    if (!settled) {
      // The caller went away: stop paying for tokens nobody will read.
      settled = true;
      clearTimeout(timer);
      facts.streamError = 'client disconnected';
      upstream.destroy();
    }
  });
  upstream.on('data', (chunk: Buffer) => {
    if (settled) return;
    if (!hooks.onData(chunk)) {
      settled = true;
      clearTimeout(timer);
      upstream.destroy();
      return;
    }
    if (sse.stream.writableNeedDrain) {
      upstream.pause();
      sse.stream.once('drain', () => upstream.resume());
    }
  });
  upstream.on('end', () => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    void Promise.resolve()
      .then(() => hooks.onEnd())
      .catch((err: unknown) => {
        const body = err instanceof GatewayError ? err.toBody() : errorBody('The gateway failed to finish the stream.', 'server_error', 'internal_error');
        facts.streamError = body.error.message;
        sse.error(body);
        sse.end();
      });
  });
  upstream.on('error', () =>
    fail(errorBody('The provider connection broke before the response was complete.', 'upstream_error', 'upstream_stream_interrupted')),
  );
  upstream.on('close', () => {
    if (!settled) fail(errorBody('The provider closed the stream before it was complete.', 'upstream_error', 'upstream_stream_interrupted'));
  });
}

const USAGE_OBJECT = /"usage"\s*:\s*\{/;

/**
 * OpenAI-shaped upstream: bytes pass through untouched; usage is read off a parsed copy.
 * `hideUsage`: the gateway asked for usage the caller did not (to price the stream), so
 * the events of each upstream read are forwarded together as soon as it is parsed, less the
 * final usage-only chunk (the others keep the `"usage":null` OpenAI puts in them then);
 * still no JSON re-encoding, and one write per read rather than per event.
 */
export function passThroughStream(upstream: Readable, facts: StreamLog, remainingMs: number | undefined, hideUsage = false): SseWriter {
  const sse = new SseWriter();
  let sawDone = false;
  /** Events of the current read to forward (hideUsage). */
  let forward = '';
  const parser = createParser({
    onEvent(event) {
      if (event.data === '[DONE]') {
        sawDone = true;
        if (hideUsage) forward += 'data: [DONE]\n\n';
        return;
      }
      let usageOnly = false;
      // Once usage is asked for, every chunk carries `"usage":null`: only one with a usage object is parsed.
      if (event.data.includes('"usage"') && USAGE_OBJECT.test(event.data)) {
        try {
          const chunk = JSON.parse(event.data) as { usage?: Usage | null; choices?: unknown[] };
          if (chunk.usage) facts.usage = chunk.usage;
          usageOnly = Boolean(chunk.usage) && Array.isArray(chunk.choices) && chunk.choices.length === 0;
        } catch {
          /* not JSON: nothing to learn */
        }
      }
      if (hideUsage && !usageOnly) forward += `data: ${event.data}\n\n`;
    },
  });
  const decoder = new TextDecoder();
  relay(upstream, sse, facts, remainingMs, {
    onData(chunk) {
      // Forward first: reading usage off the copy must not delay the caller's bytes.
      if (!hideUsage) sse.writeRaw(chunk);
      parser.feed(decoder.decode(chunk, { stream: true }));
      if (hideUsage && forward) {
        // A full buffer is backpressure (relay pauses the provider), not a reason to stop.
        sse.writeRaw(forward);
        forward = '';
      }
      return true;
    },
    onEnd() {
      if (!sawDone) facts.streamError = 'provider stream ended without [DONE]';
      sse.end();
    },
  });
  return sse;
}

function streamErrorBody(e: StreamError): ErrorBody {
  return errorBody(e.message, e.type, e.code);
}

/**
 * Checked once the whole answer is known, before `[DONE]`: returns a last chunk to send
 * (e.g. guardrail results) or throws a GatewayError that ends the stream with an error event.
 */
export type StreamFinale = (text: string) => Promise<ChatCompletionChunk | undefined>;

/** Foreign upstream format -> OpenAI chunks, then the gateway's own `data: [DONE]`. */
export function translatedStream(
  upstream: Readable,
  translator: StreamTranslator,
  facts: StreamLog,
  remainingMs: number | undefined,
  finale?: StreamFinale,
): SseWriter {
  const sse = new SseWriter();
  let text = '';
  const emit = (out: { chunks: ChatCompletionChunk[]; error?: StreamError }): boolean => {
    for (const chunk of out.chunks) {
      if (finale)
        for (const choice of chunk.choices) text += choice.delta.content ?? choice.delta.tool_calls?.map((t) => t.function?.arguments ?? '').join('') ?? '';
      sse.send(chunk);
    }
    facts.usage = translator.usage() ?? facts.usage;
    if (out.error) {
      facts.streamError = out.error.message;
      sse.error(streamErrorBody(out.error));
      sse.end();
      return false;
    }
    return true;
  };
  relay(upstream, sse, facts, remainingMs, {
    onData: (chunk) => emit(translator.push(chunk)),
    async onEnd() {
      if (!emit(translator.end())) return;
      const last = finale ? await finale(text) : undefined;
      if (last) sse.send(last);
      sse.done();
    },
  });
  return sse;
}
