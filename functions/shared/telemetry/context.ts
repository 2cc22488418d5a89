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
}

export const newRequestContext = (traceId = ''): RequestContext => ({ traceId, afterResponse: [] });

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
