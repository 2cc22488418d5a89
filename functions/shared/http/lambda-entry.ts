import { finished, Readable, type Writable } from 'node:stream';
import { isMainThread } from 'node:worker_threads';
import type { Context } from 'aws-lambda';
import { authenticate } from '../auth/authenticate';
import { authorize, checkWorkspaceRef } from '../auth/roles';
import { config } from '../config';
import { asGatewayError, callerClosedRequest, GatewayError, payloadTooLarge } from '../errors';
import { ID_PREFIX, newId } from '../ids';
import { log } from '../telemetry/logger';
import { callerLeft, flushAfterResponse, hasCallerLeft, newRequestContext, type RequestContext } from '../telemetry/context';
import { invocationEnded, invocationStarted, writeHeld } from '../telemetry/invocations';
import { installLastResort } from '../telemetry/last-resort';
import { buildRequest, functionUrlHeaders, functionUrlPath, isFunctionUrlEvent, normaliseHeaders, traceIdFrom, type HttpEvent } from './request';
import { corsResponseHeaders, preflightResponse } from './cors';
import { errorResponse, mergeHeaders } from './response';
import { methodNotAllowed, oversizedParam, routeNotFound, Router } from './router';
import type { GatewayRequest, HttpResponse, ResponseBody, Route } from './types';

/**
 * Routes that serve a group's requests instead of its own routes, when `takes` says so: a
 * group under a provider-shaped prefix hands paths it does not implement (and, for some
 * groups, requests its implementation cannot serve) to the generic proxy.
 */
export interface Passthrough {
  routes: readonly Route[];
  /** `routed`: whether one of the group's own routes matches the method and path. */
  takes(headers: Record<string, string>, routed: boolean): boolean;
}

export interface GroupOptions {
  passthrough?: Passthrough;
}

interface GroupRouter {
  own: Router;
  passthrough?: { router: Router; takes: Passthrough['takes'] };
}

function groupRouter(routes: readonly Route[], options: GroupOptions): GroupRouter {
  const { passthrough } = options;
  return { own: new Router(routes), ...(passthrough ? { passthrough: { router: new Router(passthrough.routes), takes: passthrough.takes } } : {}) };
}

function matchRequest(group: GroupRouter, method: string, path: string, headers: Record<string, string>) {
  const own = group.own.match(method, path);
  if (!group.passthrough?.takes(headers, own.kind === 'match')) return own;
  const passed = group.passthrough.router.match(method, path);
  return passed.kind === 'match' ? passed : own;
}

export const TRACE_HEADER = 'x-gateway-trace-id';

/** A generated trace id is the id of the request's log record (`log_...`). */
const newLogId = () => newId(ID_PREFIX.log);

/**
 * Serve one API Gateway REST (v1) proxy event or function URL (2.0) event: trace id -> body
 * limit -> authenticate -> route -> the route's middleware (`Route.use`) -> handler. Every
 * failure becomes the one error shape; nothing thrown escapes.
 */
export async function handleEvent(group: GroupRouter, event: HttpEvent, ctx: RequestContext): Promise<HttpResponse> {
  const functionUrl = isFunctionUrlEvent(event);
  const headers = functionUrl ? functionUrlHeaders(event) : normaliseHeaders(event);
  ctx.traceId = traceIdFrom(headers, newLogId);
  if (ctx.traceId !== headers[TRACE_HEADER]) ctx.logId = ctx.traceId;
  const method = ((functionUrl ? event.requestContext?.http?.method : event.httpMethod) ?? 'GET').toUpperCase();
  const path = functionUrl ? functionUrlPath(event.rawPath) : (event.path ?? '/');
  const preflight = preflightResponse(method, headers, path);
  if (preflight) return preflight;
  return withCors(await serveRequest(group, event, ctx, headers, method, path), corsResponseHeaders(headers, path));
}

/** `vary` is added to, not replaced (a provider's answer may have its own). */
function withCors(response: HttpResponse, cors: Record<string, string> | undefined): HttpResponse {
  if (!cors) return response;
  const vary = cors.vary && response.headers?.vary ? `${response.headers.vary}, ${cors.vary}` : cors.vary;
  return { ...response, headers: mergeHeaders(response.headers, cors, vary ? { vary } : undefined) };
}

async function serveRequest(
  group: GroupRouter,
  event: HttpEvent,
  ctx: RequestContext,
  headers: Record<string, string>,
  method: string,
  path: string,
): Promise<HttpResponse> {
  let shapeError = errorResponse;
  try {
    const req = buildRequest(event, ctx, headers, method, path);
    const match = matchRequest(group, method, path, headers);
    if (match.kind === 'match' && match.route.errorResponse) shapeError = match.route.errorResponse;
    if (req.body.length > config().maxBodyBytes) throw payloadTooLarge(config().maxBodyBytes);
    if (match.kind === 'match' && match.route.access === 'public') {
      ctx.route = match.route.name ?? `${match.route.method} ${match.route.path}`;
      req.params = match.params;
      return await match.handler(req);
    }
    const keyParam = match.kind === 'match' ? match.route.keyInQuery : undefined;
    // The key is checked on every route, known or not, so routes cannot be probed anonymously.
    req.auth = await authenticate(headers, method, keyParam ? req.query[keyParam] : undefined);
    if (keyParam) dropQueryParam(req, keyParam);
    ctx.workspaceId = req.auth.workspaceId;
    if (match.kind === 'not_found') throw routeNotFound(method, path);
    if (match.kind === 'method_not_allowed') throw methodNotAllowed(method, path, match.allowed);
    authorize(req.auth, match.route.access);
    if (match.route.access !== 'gateway') await checkNamedWorkspaces(req);
    if (match.oversized) throw oversizedParam(match.oversized, match.params[match.oversized]!);
    ctx.route = match.route.name ?? `${match.route.method} ${match.route.path}`;
    req.params = match.params;
    return await match.handler(req);
  } catch (err) {
    // The upstream call was aborted because the caller went away: nothing failed here.
    if (hasCallerLeft(ctx) && !(err instanceof GatewayError)) return shapeError(callerClosedRequest());
    const gatewayError = asGatewayError(err);
    if (gatewayError.status >= 500) {
      log.error('request failed', { route: ctx.route, method, path, error: describeError(err) }, ctx);
    }
    return shapeError(gatewayError);
  }
}

/**
 * The workspaces a control-plane request names, as `?workspace_id` or as a JSON body's
 * `workspace_id`: below `org-admin`, only the key's own (roles.ts). A body that is not a
 * JSON object is left to the route to refuse.
 */
async function checkNamedWorkspaces(req: GatewayRequest): Promise<void> {
  await checkWorkspaceRef(req.auth, req.query.workspace_id, 'workspace_id');
  if (req.auth.role === 'org-admin' || req.body.length === 0) return;
  let body: unknown;
  try {
    body = req.json();
  } catch {
    return;
  }
  if (body && typeof body === 'object' && 'workspace_id' in body) await checkWorkspaceRef(req.auth, body.workspace_id, 'workspace_id');
}

/** A secret passed in the query string is not kept: nothing downstream forwards, hashes or logs it. */
function dropQueryParam(req: GatewayRequest, name: string): void {
  if (!(name in req.query)) return;
  delete req.query[name];
  const prefix = `${encodeURIComponent(name)}=`;
  req.rawQuery = req.rawQuery
    .split('&')
    .filter((pair) => pair && !pair.startsWith(prefix))
    .join('&');
}

function describeError(err: unknown) {
  return err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : { value: String(err) };
}

const runAfterResponse = (ctx: RequestContext): Promise<void> =>
  flushAfterResponse(ctx, (err) => log.error('after-response task failed', { error: describeError(err) }, ctx));

/**
 * Send a response body to the Lambda response stream. Strings and buffers are one write;
 * a stream is piped chunk by chunk as it is produced (never buffered). Resolves when the
 * response has finished; if the caller goes away first, the body is destroyed (which
 * aborts an upstream call) and the promise rejects, as it does when the body fails.
 */
function sendBody(body: ResponseBody | undefined, out: Writable): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    finished(out, (err) => {
      if (!err) return resolve();
      if (body instanceof Readable) body.destroy();
      reject(err);
    });
    if (body === undefined) out.end();
    else if (!(body instanceof Readable)) out.end(body);
    else {
      body.on('error', (err) => out.destroy(err));
      body.pipe(out);
    }
  });
}

/**
 * Lambda Managed Instances send SIGTERM before they shut an execution environment down
 * (and a local runtime gets SIGTERM or SIGINT): what busy invocations held back (spend
 * counters, EMF values) is written first. Once it is, the signal does what it would have
 * done without this listener (the process ends), unless another listener (the local
 * runtime's shutdown) takes care of it. A worker thread gets no signals: its runtime ends
 * its invocations, and the last one writes what is held.
 */
/**
 * Every copy of this module (one per endpoint group's bundle in a process) registers its
 * held writes in one process-wide set, and one listener per signal writes them all: the
 * listener count stays the same however many groups a process loads.
 */
const SHUTDOWN_WRITES = Symbol.for('ai-gateway.shutdown-writes');
type ShutdownWrites = Set<() => Promise<void>>;

function writeHeldOnShutdown(): void {
  if (!isMainThread) return;
  const registry = globalThis as { [SHUTDOWN_WRITES]?: ShutdownWrites };
  const existing = registry[SHUTDOWN_WRITES];
  if (existing) {
    existing.add(writeHeld);
    return;
  }
  const writes: ShutdownWrites = new Set([writeHeld]);
  registry[SHUTDOWN_WRITES] = writes;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    const onSignal = () => {
      process.off(signal, onSignal);
      void Promise.all(
        [...writes].map((write) => write().catch((err: unknown) => log.error('held writes failed at shutdown', { signal, error: describeError(err) }))),
      ).finally(() => {
        if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
      });
    };
    process.on(signal, onSignal);
  }
}
writeHeldOnShutdown();

/**
 * The Lambda entry for one endpoint group, in response-streaming mode: the body is piped
 * to the caller as it is produced; work queued with `afterResponse` (request logs, usage)
 * runs once the response has been sent, and the invocation waits for it (and, if it is the
 * last one running, for what busy invocations held back: ../telemetry/invocations.ts).
 *
 * Not middy: with no middleware in the stack, all middy did here
 * was wrap string bodies in `Readable.from` and pipe every body with
 * `stream/promises.pipeline`, which on Node 20/22 builds an AbortController per request
 * and aborts it at the end (a DOMException with a stack trace): many times the CPU of one
 * write per JSON response (bench/README.md, "No middy").
 */
/**
 * The head of a streamed response. A function URL takes cookies as their own list (its
 * headers are one value per name), so a `set-cookie` header moves there.
 */
function responseMetadata(statusCode: number, headers: Record<string, string>, functionUrl: boolean) {
  const cookie = functionUrl ? headers['set-cookie'] : undefined;
  if (cookie === undefined) return { statusCode, headers };
  delete headers['set-cookie'];
  return { statusCode, headers, cookies: [cookie] };
}

export function createHttpHandler(routes: readonly Route[], options: GroupOptions = {}) {
  installLastResort();
  const group = groupRouter(routes, options);
  return awslambda.streamifyResponse(async (event: HttpEvent, responseStream: Writable, _context: Context) => {
    const ctx = newRequestContext();
    invocationStarted();
    // The caller leaving (stream closed before the response finished) aborts the upstream
    // calls made for it, before or after their headers.
    responseStream.once('close', () => {
      if (!responseStream.writableFinished) callerLeft(ctx);
    });
    try {
      const response = await handleEvent(group, event, ctx);
      const headers = mergeHeaders(response.headers, { [TRACE_HEADER]: ctx.traceId });
      const out = awslambda.HttpResponseStream.from(responseStream, responseMetadata(response.statusCode, headers, isFunctionUrlEvent(event)));
      await sendBody(response.body, out);
    } finally {
      await runAfterResponse(ctx);
      await invocationEnded();
    }
  });
}
