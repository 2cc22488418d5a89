import type { Middleware } from './types';
import { loadOnce } from '../load-once';

export const IDEMPOTENCY_HEADER = 'idempotency-key';

/** The work is a chunk loaded with the first keyed request: cold starts do not pay for it. */
const idempotencyRun = /* @__PURE__ */ loadOnce(() => import('./idempotency-run'));

/**
 * `Idempotency-Key` on the POSTs that create something or call a model (a route opts in
 * with this middleware): the first request with a key runs; a retry with the same key and
 * the same request (method, path, query, body) gets the first answer again, marked
 * `x-gateway-idempotent-replay: true`; another request under the key is a 422; a retry while
 * the first still runs is a 409 the SDKs retry (`x-should-retry: true`). Keys are scoped to
 * the workspace and the gateway key, and honoured for 24 hours.
 *
 * A first request that fails in a way a retry may fix (5xx, 408, 409, 425, 429, a stream
 * that broke or ended with an error event) releases the key, so the retry runs again; other
 * answers (2xx, 4xx) are stored and replayed. A crashed request stops renewing its claim,
 * which lapses after `IDEMPOTENCY_LEASE_MS`. A request without the header pays nothing.
 */
export const idempotency: Middleware = (req, next) => {
  const idempotencyKey = req.headers[IDEMPOTENCY_HEADER];
  if (idempotencyKey === undefined) return next();
  return idempotencyRun().then((m) => m.runIdempotent(req, idempotencyKey, next));
};
