/**
 * Token usage of an Anthropic answer passed through unchanged, read as its bytes go by, so
 * the request log and token policies see it as they do on chat. The bytes are forwarded
 * untouched and as they arrive; only the usage fields are parsed.
 */
import { Transform, type Readable } from 'node:stream';
import { anthropicErrorBody } from '../formats/messages/errors';
import { sseFrame } from '../formats/sse';
import { config } from '../shared/config';
import { GatewayError, upstreamError } from '../shared/errors';
import { EventAligner } from '../shared/http/sse-events';
import { anthropicUsage, usageCounts } from '../providers/anthropic/stream';
import type { Usage } from '../providers/types';
import { eventTooLarge, streamIncomplete } from './streaming';

/** A JSON message larger than this is forwarded without its usage being read. */
const MAX_JSON_BYTES = 4 * 1024 * 1024;

type Counts = Record<string, number | undefined>;

function parse(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `message_start` carries the input counts, `message_delta` the output (and, lately, final
 * input) counts. Returns the event's type.
 */
function sseCounts(line: string, counts: Counts): unknown {
  if (!line.startsWith('data:')) return undefined;
  const event = parse(line.slice(5).trim());
  if (!event) return undefined;
  const usage =
    event.type === 'message_start' ? (event.message as { usage?: unknown } | undefined)?.usage : event.type === 'message_delta' ? event.usage : undefined;
  Object.assign(counts, usageCounts(usage));
  return event.type;
}

/**
 * Forward `body`, calling `onUsage` once it has ended with the usage it stated (if any). An
 * event stream is forwarded whole events at a time; one that fails (cut, timeout, idle
 * upstream, an event past `MAX_STREAM_EVENT_BYTES`) ends with an Anthropic `error` event
 * after the last whole event, as Anthropic ends a stream that fails.
 */
export function watchUsage(body: Readable, stream: boolean, onUsage: (usage: Usage) => void): Readable {
  const counts: Counts = {};
  const json: Buffer[] = [];
  let jsonBytes = 0;
  const events = new EventAligner();
  const maxEventBytes = config().maxStreamEventBytes;
  let failed = false;
  /** Anthropic ends every whole answer with `message_stop` (or an `error` event of its own). */
  let ended = false;
  const seen = (line: string) => {
    const type = sseCounts(line, counts);
    if (type === 'message_stop' || type === 'error') ended = true;
  };
  const report = () => {
    if (Object.keys(counts).length) onUsage(anthropicUsage(counts));
  };
  const watcher = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (failed) return done();
      if (!stream) {
        if (jsonBytes <= MAX_JSON_BYTES) {
          json.push(chunk);
          jsonBytes += chunk.length;
        }
        return done(null, chunk);
      }
      const whole = events.push(chunk);
      if (whole) {
        for (const line of whole.toString('utf8').split(/\r\n|\r|\n/)) seen(line);
        this.push(whole);
      }
      if (events.pendingBytes > maxEventBytes) fail(eventTooLarge(maxEventBytes));
      done();
    },
    flush(done) {
      if (failed) return done();
      if (stream) {
        const rest = events.rest();
        if (rest) {
          seen(rest.toString('utf8'));
          this.push(rest);
        }
        if (!ended) {
          fail(streamIncomplete());
          return done();
        }
      } else if (jsonBytes <= MAX_JSON_BYTES) Object.assign(counts, usageCounts(parse(Buffer.concat(json).toString('utf8'))?.usage));
      report();
      done();
    },
  });
  function fail(err: GatewayError): void {
    if (failed) return;
    failed = true;
    report();
    watcher.push(sseFrame(anthropicErrorBody(err)));
    watcher.push(null);
    if (!body.destroyed) body.destroy();
  }
  body.on('error', (err) => {
    if (!stream) watcher.destroy(err);
    else
      fail(err instanceof GatewayError ? err : upstreamError('The provider connection broke before the response was complete.', 'upstream_stream_interrupted'));
  });
  watcher.on('close', () => {
    if (!body.destroyed) body.destroy();
  });
  return body.pipe(watcher);
}
