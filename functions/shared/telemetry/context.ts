/**
 * Per-request context, passed explicitly (a request carries it as `req.context`).
 *
 * Not AsyncLocalStorage: on Node 20 and 22 (Lambda's nodejs22.x) it runs a promise hook
 * for every promise of the process once any store is active, which cost 7-14 % of the
 * gateway's CPU per request (bench/README.md, item 18). A module-level "current request" would be
 * wrong in the local runtime, which interleaves many invocations in one process.
 */
export interface RequestContext {
  traceId: string;
  route?: string;
  workspaceId?: string;
  /**
   * The id reserved for this request's own log record when the gateway made the trace id:
   * the trace id itself, so that a generated trace is found by the record's key and the
   * record needs no trace-index write (functions/gateway/request-log.ts).
   */
  logId?: string;
  /** Work to run after the response has been sent (request logs, usage). */
  afterResponse: Array<() => Promise<void>>;
  /**
   * Aborted when the caller goes away before its response has been sent (`callerLeft`):
   * upstream calls made for the request take it, so a provider stops working for nobody.
   */
  readonly signal?: AbortSignal;
  /**
   * The same event as `signal`, for the gateway's own upstream client (functions/shared/net/
   * http-client.ts): a plain object, where an AbortSignal (an EventTarget) costs more to
   * make, listen to and leave than the rest of the client's work per request.
   */
  readonly callerGone?: AbortLike;
}

/** What the upstream client needs of a signal; an AbortSignal is one. */
export interface AbortLike {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** A one-shot abort event with its listeners in an array. */
class CallerGone implements AbortLike {
  aborted = false;
  reason: unknown;
  private listeners: Array<() => void> = [];

  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.aborted) this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners.indexOf(listener);
    if (i >= 0) this.listeners.splice(i, 1);
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    for (const listener of this.listeners.splice(0)) listener();
  }
}

/** The reason of `signal` once the caller has gone. */
export class CallerLeftError extends Error {
  constructor() {
    super('The caller closed the connection before the response was sent.');
    this.name = 'CallerLeftError';
  }
}

/** Its AbortController is created on the first read of `signal` (inference routes only). */
class Context implements RequestContext {
  route?: string;
  workspaceId?: string;
  logId?: string;
  afterResponse: Array<() => Promise<void>> = [];
  private controller?: AbortController;
  readonly callerGone = new CallerGone();
  left = false;
  outlivesCaller = false;

  constructor(public traceId: string) {}

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.left) this.controller.abort(new CallerLeftError());
    }
    return this.controller.signal;
  }

  callerLeft(): void {
    if (this.left || this.outlivesCaller) return;
    this.left = true;
    const reason = new CallerLeftError();
    this.controller?.abort(reason);
    this.callerGone.abort(reason);
  }
}

export const newRequestContext = (traceId = ''): RequestContext => new Context(traceId);

/** The caller's connection closed before its response was finished: abort what works for it. */
export function callerLeft(ctx: RequestContext): void {
  if (ctx instanceof Context) ctx.callerLeft();
}

/**
 * Let the request's work run to its end although its caller leaves: a request whose answer
 * is kept for a retry (`Idempotency-Key`) would otherwise be paid for twice, once cut off
 * and once again by the retry. Its own bounds (the request timeout) still apply.
 */
export function outliveCaller(ctx: RequestContext): void {
  if (ctx instanceof Context) ctx.outlivesCaller = true;
}

/** Whether the caller went away before its response was finished. */
export const hasCallerLeft = (ctx: RequestContext): boolean => ctx instanceof Context && ctx.left;

/** Schedule work for after the response; the invocation waits for it before it ends. */
export function afterResponse(ctx: RequestContext, task: () => Promise<void>): void {
  ctx.afterResponse.push(task);
}

/**
 * Run the after-response work queued so far, all at once; a task's failure goes to
 * `onError` and does not stop the others.
 */
export async function flushAfterResponse(ctx: RequestContext, onError: (err: unknown) => void): Promise<void> {
  const tasks = ctx.afterResponse.splice(0);
  await Promise.all(tasks.map((task) => task().catch(onError)));
}
