import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Per-request context carried through async calls. In Lambda a container serves one
 * request at a time, but the local runtime interleaves many in one process, so a
 * module-level "current trace id" would leak between requests.
 */
export interface RequestContext {
  traceId: string;
  route?: string;
  workspaceId?: string;
  /** Work to run after the response has been sent (request logs, usage). */
  afterResponse: Array<() => Promise<void>>;
}

const storage = new AsyncLocalStorage<RequestContext>();

export const runWithContext = <T>(ctx: RequestContext, fn: () => T): T => storage.run(ctx, fn);
export const currentContext = (): RequestContext | undefined => storage.getStore();
export const currentTraceId = (): string | undefined => storage.getStore()?.traceId;

/** Schedule work for after the response; outside a request it runs in the background. */
export function afterResponse(task: () => Promise<void>): void {
  const ctx = storage.getStore();
  if (ctx) ctx.afterResponse.push(task);
  else void task().catch(() => undefined);
}
