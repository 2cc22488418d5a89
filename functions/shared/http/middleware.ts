import type { Handler, Middleware } from './types';

/**
 * `handler` wrapped in `middleware`, the first one outermost: each runs its part before
 * and after `next()`, or answers without calling it. Composed once per route when the
 * router is built, so a route without middleware runs its handler as it is.
 */
export function compose(middleware: readonly Middleware[], handler: Handler): Handler {
  return middleware.reduceRight<Handler>((next, step) => async (req) => step(req, () => next(req)), handler);
}
