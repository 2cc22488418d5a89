import type { Readable } from 'node:stream';
import { config } from '../shared/config';
import { GatewayError, upstreamError, upstreamTooLarge } from '../shared/errors';
import { AbortError } from '../shared/net/http-client';

/**
 * A streamed request's 200 is only passed on once its body looks like server-sent events:
 * HTML, a JSON body, gzip bytes or nothing at all would otherwise reach the caller as an
 * empty `200 text/event-stream`. Nothing has been sent yet, so a body that fails the check is
 * the attempt's failure (502 `invalid_upstream_response`: retries and fallbacks apply).
 *
 * Only the first line is read (usually the first event, in the first read): the bytes are
 * put back with `unshift`, so the relay forwards them untouched, and the caller's first
 * event waits for nothing more than it did. Binary event streams (Bedrock) are not SSE and
 * are left to their own decoder.
 */

/** An SSE line: a comment, or one of the four fields (`data`, `event`, `id`, `retry`). */
const SSE_LINE = /^(?::|(?:data|event|id|retry)(?::|$))/;
/** The longest start of a line that decides whether it can be one (`retry:`). */
const FIELD_PREFIX = 6;
const LF = 10;
const CR = 13;
/** Bytes after which a first line that has not ended is judged only at its end or at the cap. */
const DECIDING_PREFIX = 64;
const BINARY_EVENT_STREAM = 'application/vnd.amazon.eventstream';

export type FirstLine = 'sse' | 'not-sse' | 'too-large' | 'more';

/**
 * Judge the start of a stream's text by its first line: `more` until a whole line (or its
 * first few characters, for a line that cannot be SSE) is in. A first `data:` line must hold
 * JSON (or `[DONE]`), as every chat stream's does.
 */
export function judgeFirstLine(text: string, maxBytes: number): FirstLine {
  const start = text.search(/[^\r\n\ufeff]/);
  if (start < 0) return text.length > maxBytes ? 'not-sse' : 'more';
  const rest = start ? text.slice(start) : text;
  const eol = rest.search(/[\r\n]/);
  const line = eol < 0 ? rest : rest.slice(0, eol);
  if (!SSE_LINE.test(line.slice(0, FIELD_PREFIX))) return line.length >= FIELD_PREFIX || eol >= 0 ? 'not-sse' : 'more';
  if (eol < 0) return line.length > maxBytes ? 'too-large' : 'more';
  if (!line.startsWith('data')) return 'sse';
  const value = line.slice(line.charCodeAt(5) === 32 ? 6 : 5).trim();
  if (value === '' || value === '[DONE]') return 'sse';
  try {
    JSON.parse(value);
    return 'sse';
  } catch {
    return 'not-sse';
  }
}

function invalid(provider: string, what: string): GatewayError {
  return upstreamError(`Provider '${provider}' answered a streamed request with ${what}, not server-sent events.`, 'invalid_upstream_response');
}

/**
 * Resolves once the body's first line is SSE (its bytes back in the stream); rejects with a
 * GatewayError otherwise, the body destroyed. A body failure while reading (reset, the
 * request timeout) rejects with the client's GatewayError, the caller leaving with its AbortError.
 */
export function checkEventStream(body: Readable, headers: Record<string, string | string[]>, provider: string): Promise<void> {
  keepBytesBeforeCut(body);
  if (String(headers['content-type'] ?? '').includes(BINARY_EVENT_STREAM)) return Promise.resolve();
  const encoding = String(headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'identity') {
    body.destroy();
    return Promise.reject(invalid(provider, `a '${encoding}'-encoded body`));
  }
  const maxBytes = config().maxStreamEventBytes;
  const seen: Buffer[] = [];
  let size = 0;
  /** The first line's start was judged: only its end (or the cap) can change the verdict. */
  let prefixJudged = false;
  const head = () => (seen.length === 1 ? seen[0]! : Buffer.concat(seen, size));
  /** Reads what is buffered; a verdict once there is one (the bytes read stay in `seen`). */
  const judgeBuffered = (): Error | 'sse' | undefined => {
    let chunk: Buffer | null;
    while ((chunk = body.read() as Buffer | null) !== null) {
      seen.push(chunk);
      size += chunk.length;
      // Judged again only when the verdict can change: a line end arrived, or the cap is passed.
      if (prefixJudged && size <= maxBytes && !chunk.includes(LF) && !chunk.includes(CR)) continue;
      const verdict = judgeFirstLine(head().toString('utf8'), maxBytes);
      prefixJudged = size > DECIDING_PREFIX;
      if (verdict === 'sse') return 'sse';
      if (verdict === 'not-sse') return invalid(provider, describe(head()));
      if (verdict === 'too-large')
        return upstreamTooLarge(`Provider '${provider}' sent a stream event larger than ${maxBytes} bytes.`, 'upstream_event_too_large');
    }
    return undefined;
  };
  // The first event usually came in with the headers: judged at once, with no wait for a
  // 'readable' event (a turn of the event loop before the caller's first byte).
  const early = body.readableLength > 0 ? judgeBuffered() : undefined;
  if (early === 'sse') {
    body.unshift(head());
    return Promise.resolve();
  }
  if (early) {
    body.destroy();
    return Promise.reject(early);
  }
  return new Promise<void>((resolve, reject) => {
    const done = (err?: Error) => {
      body.off('readable', onReadable);
      body.off('end', onEnd);
      body.off('error', onError);
      body.off('close', onClose);
      if (err) {
        body.destroy();
        reject(err);
        return;
      }
      if (size) body.unshift(head());
      resolve();
    };
    function onReadable() {
      const verdict = judgeBuffered();
      if (verdict === 'sse') done();
      else if (verdict) done(verdict);
    }
    function onEnd() {
      done(invalid(provider, size ? describe(head()) : 'an empty body'));
    }
    function onError(err: Error) {
      // The client's GatewayErrors (deadline, idle bound, cut) and the caller leaving (AbortError) are passed on as they are.
      const known = err instanceof GatewayError || err instanceof AbortError;
      done(known ? err : upstreamError(`Provider '${provider}' broke the connection before its stream began.`, 'upstream_response_ended'));
    }
    function onClose() {
      onError(new Error('closed'));
    }
    body.on('readable', onReadable);
    body.once('end', onEnd);
    body.once('error', onError);
    body.once('close', onClose);
  });
}

/**
 * A connection cut (reset, premature close) destroys the body at once, and a destroyed
 * Readable drops the bytes it holds that nobody has read yet: the first events, put back by
 * the check above or arrived in the same read as the cut, would be lost, and the caller would
 * get the cut without the text before it (or, before the check's verdict, a 502 although
 * the provider had started answering). So a cut that finds unread bytes waits until they are
 * read, then fails the body (the stream's events, then its terminal error). The gateway's own failures (deadline, idle bound, the caller
 * leaving: a GatewayError or an AbortError) still destroy at once: nobody may read the rest.
 */
function keepBytesBeforeCut(body: Readable): void {
  const { destroy, read, push } = body;
  let cut: Error | undefined;
  const failOnceRead = () => {
    if (cut && body.readableLength === 0) destroy.call(body, cut);
  };
  body.destroy = function (this: Readable, err?: Error) {
    const ours = err instanceof GatewayError || err instanceof AbortError;
    if (!err || ours || this.destroyed || this.readableLength === 0) return destroy.call(this, err);
    cut ??= err;
    return this;
  };
  body.read = function (this: Readable, size?: number) {
    const chunk: unknown = read.call(this, size);
    if (cut && this.readableLength === 0) process.nextTick(failOnceRead);
    return chunk;
  };
  // Node ends a cut response's body after destroying it; held, the cut is its end.
  body.push = function (this: Readable, chunk: unknown, encoding?: BufferEncoding) {
    return chunk === null && cut ? false : push.call(this, chunk, encoding);
  };
}

function describe(bytes: Buffer): string {
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) return 'a gzip-compressed body';
  const start = bytes.subarray(0, 64).toString('utf8').trimStart();
  if (start.startsWith('<')) return 'an HTML or XML body';
  if (start.startsWith('{') || start.startsWith('[')) return 'a JSON body';
  return 'a body';
}
