import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import middy from '@middy/core';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { authenticate } from '../auth/authenticate';
import { config } from '../config';
import { asGatewayError, payloadTooLarge } from '../errors';
import { uuid } from '../ids';
import { log } from '../telemetry/logger';
import { runWithContext, type RequestContext } from '../telemetry/context';
import { buildRequest, normaliseHeaders, traceIdFrom } from './request';
import { errorResponse } from './response';
import { methodNotAllowed, routeNotFound, Router } from './router';
import type { HttpResponse, Route } from './types';

export const TRACE_HEADER = 'x-gateway-trace-id';

interface StreamingResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: Readable;
}

/**
 * Serve one API Gateway REST (v1) proxy event: trace id -> body limit -> authenticate ->
 * route -> handler. Every failure becomes the one error shape; nothing thrown escapes.
 */
export async function handleEvent(router: Router, event: APIGatewayProxyEvent, ctx: RequestContext): Promise<HttpResponse> {
  const headers = normaliseHeaders(event);
  ctx.traceId = traceIdFrom(headers, uuid);
  const method = (event.httpMethod ?? 'GET').toUpperCase();
  const path = event.path ?? '/';
  try {
    const req = buildRequest(event, ctx.traceId, headers);
    if (req.body.length > config().maxBodyBytes) throw payloadTooLarge(config().maxBodyBytes);
    const match = router.match(method, path);
    // The key is checked on every route, known or not, so routes cannot be probed anonymously.
    req.auth = await authenticate(headers, match.kind === 'match' ? match.route.scope : 'gateway');
    ctx.workspaceId = req.auth.workspaceId;
    if (match.kind === 'not_found') throw routeNotFound(method, path);
    if (match.kind === 'method_not_allowed') throw methodNotAllowed(method, path, match.allowed);
    ctx.route = match.route.name ?? `${match.route.method} ${match.route.path}`;
    req.params = match.params;
    return await match.route.handler(req);
  } catch (err) {
    const gatewayError = asGatewayError(err);
    if (gatewayError.status >= 500) {
      log.error('request failed', { route: ctx.route, method, path, error: describeError(err) });
    }
    return errorResponse(gatewayError);
  }
}

function describeError(err: unknown) {
  return err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : { value: String(err) };
}

function toStreaming(res: HttpResponse, traceId: string): StreamingResponse {
  const body = res.body;
  const stream =
    body === undefined ? Readable.from([]) : typeof body === 'string' || Buffer.isBuffer(body) ? Readable.from([body]) : body;
  return { statusCode: res.statusCode, headers: { ...res.headers, [TRACE_HEADER]: traceId }, body: stream };
}

async function runAfterResponse(ctx: RequestContext): Promise<void> {
  const tasks = ctx.afterResponse.splice(0);
  await Promise.all(
    tasks.map((task) =>
      task().catch((err: unknown) => runWithContext(ctx, () => log.error('after-response task failed', { error: describeError(err) }))),
    ),
  );
}

/**
 * The Lambda entry for one endpoint group: middy in response-streaming mode. The body
 * is piped to the caller as it is produced; work queued with `afterResponse` (request
 * logs, usage) runs once the body has been consumed, and the invocation waits for it.
 */
export function createHttpHandler(routes: readonly Route[]) {
  const router = new Router(routes);
  const pending = new WeakMap<object, Promise<void>>();
  return middy<APIGatewayProxyEvent, StreamingResponse, Error, Context>({
    streamifyResponse: true,
    timeoutEarlyInMillis: 0,
    requestEnd: async (request: { event: object }) => {
      await pending.get(request.event);
    },
  } as Parameters<typeof middy>[1]).handler(async (event) => {
    const ctx: RequestContext = { traceId: '', afterResponse: [] };
    const response = await runWithContext(ctx, () => handleEvent(router, event, ctx));
    const streaming = toStreaming(response, ctx.traceId);
    // Start after-response work when the body is done, whether it ended or the caller left.
    pending.set(
      event,
      finished(streaming.body)
        .catch(() => undefined)
        .then(() => runWithContext(ctx, () => runAfterResponse(ctx))),
    );
    return streaming;
  });
}
