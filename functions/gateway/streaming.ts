import type { Readable } from 'node:stream';
import { createParser } from 'eventsource-parser';
import { config } from '../shared/config';
import { GatewayError, upstreamError, upstreamTooLarge, type ErrorBody } from '../shared/errors';
import { SseWriter } from '../shared/http/sse';
import { EventAligner } from '../shared/http/sse-events';
import type { ChatCompletionChunk, StreamError, StreamTranslator, Usage } from '../providers/types';
import type { RequestFacts } from '../spend/request-record';

/** What a stream learns after its response has started: the request log's one sink for it. */
export type StreamLog = Pick<RequestFacts, 'usage' | 'streamError'>;

const errorBody = (message: string, type: string, code: string | null): ErrorBody => ({
  error: { message, type, param: null, code },
});

/** A stream event (or line) past `MAX_STREAM_EVENT_BYTES`: the stream ends rather than buffer it. */
export const eventTooLarge = (maxBytes: number) =>
  upstreamTooLarge(`The provider sent a stream event larger than ${maxBytes} bytes; the stream was cut.`, 'upstream_event_too_large');

/** The upstream ended cleanly but without `[DONE]` or a finish reason: the answer is not whole. */
export const streamIncomplete = () => upstreamError('The provider stream ended before the answer was complete.', 'upstream_stream_incomplete');

const interrupted = () => errorBody('The provider connection broke before the response was complete.', 'upstream_error', 'upstream_stream_interrupted');

interface RelayHooks {
  /** Bytes from upstream; return false to stop (an in-stream error was reported); throw a GatewayError to end with it. */
  onData(chunk: Buffer): boolean;
  /** Upstream ended cleanly; throw a GatewayError to end with it instead of a clean end. */
  onEnd(): void | Promise<void>;
}

/**
 * Pump an upstream body into an SSE writer with backpressure. The caller leaving aborts
 * the upstream request; an upstream cut, a GatewayError the HTTP client destroys the body
 * with (the request timeout, the idle bound) or the caller's timeout ends the stream with
 * an error event, never with a clean-looking end. Nothing thrown here reaches the process.
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
  const failWith = (err: unknown) =>
    fail(err instanceof GatewayError ? err.toBody() : errorBody('The gateway failed to relay the stream.', 'server_error', 'internal_error'));
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
    let more: boolean;
    try {
      more = hooks.onData(chunk);
    } catch (err) {
      failWith(err);
      return;
    }
    if (!more) {
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
        settled = false;
        failWith(err);
      });
  });
  upstream.on('error', (err) => fail(err instanceof GatewayError ? err.toBody() : interrupted()));
  upstream.on('close', () => {
    if (!settled) fail(errorBody('The provider closed the stream before it was complete.', 'upstream_error', 'upstream_stream_interrupted'));
  });
}

const USAGE_OBJECT = /"usage"\s*:\s*\{/;
const FINISHED = /"finish_reason"\s*:\s*"/;
const EVENT_END = Buffer.from('\n\n');

/**
 * OpenAI-shaped upstream: bytes pass through untouched, whole events at a time (an event
 * split across reads waits for its end; one past `MAX_STREAM_EVENT_BYTES` ends the stream);
 * usage, `[DONE]` and finish reasons are read off a parsed copy. A stream that ends with
 * neither `[DONE]` nor a finish reason ends with an error event.
 * `hideUsage`: the gateway asked for usage the caller did not (to price the stream), so
 * the events of each upstream read are forwarded together as soon as it is parsed, less the
 * final usage-only chunk (the others keep the `"usage":null` OpenAI puts in them then);
 * still no JSON re-encoding, and one write per read rather than per event.
 */
export function passThroughStream(upstream: Readable, facts: StreamLog, remainingMs: number | undefined, hideUsage = false): SseWriter {
  const sse = new SseWriter();
  const maxEventBytes = config().maxStreamEventBytes;
  const events = new EventAligner();
  let sawDone = false;
  let sawFinish = false;
  /** Events of the current read to forward (hideUsage). */
  let forward = '';
  const parser = createParser({
    onEvent(event) {
      if (event.data === '[DONE]') {
        sawDone = true;
        if (hideUsage) forward += 'data: [DONE]\n\n';
        return;
      }
      if (!sawFinish && event.data.includes('"finish_reason"') && FINISHED.test(event.data)) sawFinish = true;
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
  const read = (whole: Buffer) => {
    // Forward first: reading usage off the copy must not delay the caller's bytes.
    if (!hideUsage) sse.writeRaw(whole);
    parser.feed(decoder.decode(whole, { stream: true }));
    if (hideUsage && forward) {
      // A full buffer is backpressure (relay pauses the provider), not a reason to stop.
      sse.writeRaw(forward);
      forward = '';
    }
  };
  relay(upstream, sse, facts, remainingMs, {
    onData(chunk) {
      const whole = events.push(chunk);
      if (whole) read(whole);
      if (events.pendingBytes > maxEventBytes) throw eventTooLarge(maxEventBytes);
      return true;
    },
    onEnd() {
      const rest = events.rest();
      if (rest) {
        // A last event without its blank line counts when it completes the answer; a cut one is dropped.
        parser.feed(`${decoder.decode(rest)}\n\n`);
        if (sawDone || sawFinish) {
          if (!hideUsage) sse.writeRaw(Buffer.concat([rest, EVENT_END]));
          else if (forward) sse.writeRaw(forward);
        }
        forward = '';
      }
      if (!sawDone) {
        if (!sawFinish) throw streamIncomplete();
        facts.streamError = 'provider stream ended without [DONE]';
      }
      sse.end();
    },
  });
  return sse;
}

/**
 * A provider's SSE answer on the generic proxy: its bytes, whole events at a time, as
 * received. The proxy does not know the endpoint's protocol, so a clean end is passed on as
 * one; a failure (cut, timeout, idle upstream, an event past the cap) ends it with an error
 * event in the OpenAI shape, after the last whole event.
 */
export function proxiedEventStream(upstream: Readable, facts: StreamLog, remainingMs: number | undefined): SseWriter {
  const sse = new SseWriter();
  const maxEventBytes = config().maxStreamEventBytes;
  const events = new EventAligner();
  relay(upstream, sse, facts, remainingMs, {
    onData(chunk) {
      const whole = events.push(chunk);
      if (whole) sse.writeRaw(whole);
      if (events.pendingBytes > maxEventBytes) throw eventTooLarge(maxEventBytes);
      return true;
    },
    onEnd() {
      const rest = events.rest();
      if (rest) sse.writeRaw(rest);
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

/**
 * Foreign upstream format -> OpenAI chunks, then the gateway's own `data: [DONE]`. A stream
 * that ends before any chunk had a finish reason (and, for OpenAI chunks, before `[DONE]`:
 * `sawDone`) ends with an error event instead.
 */
export function translatedStream(
  upstream: Readable,
  translator: StreamTranslator,
  facts: StreamLog,
  remainingMs: number | undefined,
  finale?: StreamFinale,
  sawDone: () => boolean = () => false,
): SseWriter {
  const sse = new SseWriter();
  let text = '';
  let sawFinish = false;
  const emit = (out: { chunks: ChatCompletionChunk[]; error?: StreamError }): boolean => {
    for (const chunk of out.chunks) {
      for (const choice of chunk.choices) {
        if (choice.finish_reason) sawFinish = true;
        if (finale) text += choice.delta.content ?? choice.delta.tool_calls?.map((t) => t.function?.arguments ?? '').join('') ?? '';
      }
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
      if (!sawFinish && !sawDone()) throw streamIncomplete();
      const last = finale ? await finale(text) : undefined;
      if (last) sse.send(last);
      sse.done();
    },
  });
  return sse;
}
