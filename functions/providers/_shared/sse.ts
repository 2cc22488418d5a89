/**
 * The one SSE reader behind every text-stream translator: bytes in (split anywhere, even
 * inside a UTF-8 character), parsed events out through eventsource-parser. Comments such
 * as `: keep-alive` never reach the handler. After an error or `done()` the rest of the
 * upstream stream is ignored.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { config } from '../../shared/config';
import type { ChatCompletionChunk, StreamError, StreamTranslator, Usage } from '../types';

export interface Output {
  chunks: ChatCompletionChunk[];
  error?: StreamError;
}

export interface SseHandler {
  /** One parsed event; push chunks or set `out.error`; call `done()` at the terminal event. */
  event(ev: EventSourceMessage, out: Output, done: () => void): void;
  /** Called once when the stream ends (terminal event or end of input). */
  finish?(out: Output): void;
  usage(): Usage | undefined;
}

export function sseTranslator(handler: SseHandler): StreamTranslator {
  // An event (or line) past this is not buffered further: the stream ends with an error.
  const maxEventBytes = config().maxStreamEventBytes;
  const decoder = new TextDecoder('utf-8');
  let out: Output = { chunks: [] };
  let stopped = false;
  let failed = false;
  let finished = false;

  const finish = () => {
    if (finished) return;
    finished = true;
    handler.finish?.(out);
  };
  const parser = createParser({
    maxBufferSize: maxEventBytes,
    onEvent(ev) {
      if (stopped) return;
      handler.event(ev, out, () => {
        stopped = true;
        finish();
      });
      if (out.error) stopped = failed = true;
    },
    onError(err) {
      if (err.type === 'max-buffer-size-exceeded' && !stopped) {
        stopped = failed = true;
        out.error = {
          status: 502,
          message: `The provider sent a stream event larger than ${maxEventBytes} bytes; the stream was cut.`,
          type: 'upstream_error',
          code: 'upstream_event_too_large',
        };
      }
    },
  });
  const feed = (text: string) => {
    if (!stopped && text) parser.feed(text);
  };

  return {
    push(bytes) {
      out = { chunks: [] };
      feed(decoder.decode(bytes, { stream: true }));
      return out;
    },
    end() {
      out = { chunks: [] };
      // The blank lines dispatch a last event the upstream did not terminate.
      feed(`${decoder.decode()}\n\n`);
      stopped = true;
      if (!failed) finish();
      return out;
    },
    usage: () => handler.usage(),
  };
}
