import type { ErrorBody } from '../../shared/errors';
import { SseWriter } from '../../shared/http/sse';

/**
 * Where the engine reports what a run does, as OpenAI assistant stream events
 * (the providers' API references): `thread.run.*`, `thread.run.step.*`, `thread.message.*`.
 * A non-streamed run (the workflow) reports to NO_EVENTS; a streamed one to an SSE
 * writer, each event as `event: <name>` + `data: <json>`.
 */
export interface RunEventSink {
  emit(event: string, data: unknown): void;
  /** Aborted when the listener went away (the streaming caller disconnected). */
  readonly signal?: AbortSignal;
}

export const NO_EVENTS: RunEventSink = { emit: () => undefined };

/** Events of a streamed run, written to an SSE response body. */
export class SseRunEvents implements RunEventSink {
  readonly sse = new SseWriter();
  /** Every event name sent, in order (for logs and tests of the engine). */
  readonly sent: string[] = [];
  private readonly controller = new AbortController();
  private finished = false;

  constructor() {
    this.sse.stream.on('close', () => {
      if (!this.finished) this.controller.abort();
    });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  emit(event: string, data: unknown): void {
    if (this.finished) return;
    this.sent.push(event);
    this.sse.send(data, event);
  }

  /** `event: error` with the gateway's error body (the SDKs raise it as an APIError). */
  error(body: ErrorBody): void {
    if (this.finished) return;
    this.sent.push('error');
    this.sse.error(body, 'error');
  }

  /** `event: done` / `data: [DONE]`, then the end of the body. */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.sent.push('done');
    this.sse.done('done');
  }
}
