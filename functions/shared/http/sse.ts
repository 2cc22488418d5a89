import { PassThrough } from 'node:stream';
import type { ErrorBody } from '../errors';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
} as const;

/**
 * Writes server-sent events into a stream that a route returns as its body. Each frame
 * is written as soon as it is produced (no buffering). `closed` turns true when the
 * caller went away, so producers can stop and abort upstream work.
 */
export class SseWriter {
  readonly stream = new PassThrough();
  private ended = false;

  constructor() {
    this.stream.on('close', () => {
      this.ended = true;
    });
  }

  get closed(): boolean {
    return this.ended || this.stream.destroyed;
  }

  /** `data: <json>` with an optional `event:` line. Strings are sent verbatim. */
  send(data: unknown, event?: string): boolean {
    if (this.closed) return false;
    const payload = typeof data === 'string' ? data : JSON.stringify(data);
    const frame = `${(event ? `event: ${event}\n` : '') + dataLines(payload)}\n`;
    return this.stream.write(frame);
  }

  /** Raw, already framed SSE text (used when passing provider frames through). */
  writeRaw(chunk: string | Buffer): boolean {
    if (this.closed) return false;
    return this.stream.write(chunk);
  }

  comment(text: string): void {
    if (!this.closed) this.stream.write(`: ${text}\n\n`);
  }

  /** An in-stream error the OpenAI SDKs raise as APIError (data with an `error` key). */
  error(body: ErrorBody, event?: string): void {
    this.send(body, event);
  }

  /** The terminal `data: [DONE]` frame, optionally preceded by a named `done` event. */
  done(event?: 'done'): void {
    this.send('[DONE]', event);
    this.end();
  }

  end(): void {
    if (this.closed) return;
    this.ended = true;
    this.stream.end();
  }
}

function dataLines(payload: string): string {
  // A payload with newlines must be split into several data lines (SSE framing).
  return payload.includes('\n')
    ? payload
        .split('\n')
        .map((l) => `data: ${l}\n`)
        .join('')
    : `data: ${payload}\n`;
}
