import type { ZodMiniType } from 'zod/mini';
import { log } from '../telemetry/logger';

/**
 * An event or queue message a worker cannot act on: its shape is not the one the state
 * machine or the producer sends. Thrown instead of letting the worker crash on a missing
 * property; it can never succeed, so the queue consumer drops such a message (logged) and
 * a Step Functions task fails with this error name.
 */
export class MalformedEventError extends Error {
  override name = 'MalformedEventError';

  constructor(
    readonly source: string,
    /** `path: problem` per issue, e.g. `runId: Invalid input: expected string, received undefined`. */
    readonly issues: readonly string[],
  ) {
    super(`${source}: malformed event (${issues.join('; ')})`);
  }
}

/** The event as `schema` types it, or a logged MalformedEventError naming each bad field. */
export function parseEvent<T>(schema: ZodMiniType<T>, event: unknown, source: string): T {
  const result = schema.safeParse(event);
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => `${i.path.join('.') || '(event)'}: ${i.message}`);
  log.error('malformed event', { source, issues });
  throw new MalformedEventError(source, issues);
}
