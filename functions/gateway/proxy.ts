import { namesAnyProvider, namesPerRequestProvider } from '../shared/auth/managed-provider';
import { badRequest } from '../shared/errors';
import type { Passthrough } from '../shared/http/lambda-entry';
import { compose } from '../shared/http/middleware';
import { errorResponse, mergeHeaders } from '../shared/http/response';
import type { GatewayRequest, HttpResponse, Route } from '../shared/http/types';
import type { ProviderAdapter, ProviderTarget, UpstreamRequest } from '../providers/types';
import { isForwardableRequestHeader, responseHeadersFrom } from './headers';
import { dispatch, gatewayHeaders } from './pipeline';
import { providerPath } from './proxy-path';
import { requestFacts, requestLog } from './request-log';
import { failureResponse, succeeded } from './responses';
import { proxiedEventStream } from './streaming';
import { failureBeforeFirstBytes } from './upstream-body';

const IDENTITY_ENCODING = { 'accept-encoding': 'identity' } as const;

/** The caller's headers minus gateway, hop-by-hop and credential headers. */
function callerHeaders(req: GatewayRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) if (isForwardableRequestHeader(name)) out[name] = value;
  return out;
}

/** Provider base URL + the path after /v1 (refused when it could leave the base) + the query string, as the caller sent them. */
export function proxyRequest(req: GatewayRequest, adapter: ProviderAdapter, target: ProviderTarget, path: string): UpstreamRequest {
  const base = adapter.baseUrl(target).replace(/\/+$/, '');
  const url = `${base}/${providerPath(path).replace(/^\/+/, '')}${req.rawQuery ? `?${req.rawQuery}` : ''}`;
  const method = req.method as UpstreamRequest['method'];
  const hasBody = method !== 'GET' && req.body.length > 0;
  return {
    url,
    method,
    headers: mergeHeaders(callerHeaders(req), adapter.authHeaders(target), IDENTITY_ENCODING),
    ...(hasBody ? { body: req.body } : {}),
  };
}

/** `model` of a JSON body, when there is one (for rate-limit conditions and logs). */
function modelOf(req: GatewayRequest): string | undefined {
  if (!req.body.length || !String(req.headers['content-type'] ?? '').includes('json')) return undefined;
  try {
    const model = (JSON.parse(req.body.toString('utf8')) as { model?: unknown }).model;
    return typeof model === 'string' ? model : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The generic proxy: any provider endpoint, forwarded unchanged, the response
 * streamed back chunk by chunk with the provider's status and headers. A route whose
 * answers may be replayed names its `cacheRoute` (the response cache applies then).
 */
export async function forwardToProvider(req: GatewayRequest, cacheRoute?: string): Promise<HttpResponse> {
  const facts = requestFacts(req);
  const path = req.params.proxy ?? '';
  if (!path) throw badRequest('Name the provider endpoint after /v1, e.g. /v1/models.', null, 'missing_path');
  // Checked again where the URL is built; here, before any provider is resolved or limit counted.
  providerPath(path);
  const model = modelOf(req);
  const d = await dispatch({ req, log: facts, model, cacheRoute, build: ({ adapter, target }) => proxyRequest(req, adapter, target, path) });
  const stream = String(d.routing.result.response?.headers['content-type'] ?? '').includes('text/event-stream');
  Object.assign(facts, d.facts, { stream });
  if (!succeeded(d)) return failureResponse(d);
  const upstream = d.routing.result.response!;
  if (!stream) {
    const failed = await failureBeforeFirstBytes(upstream.body);
    if (failed) {
      const res = errorResponse(failed);
      return { ...res, headers: mergeHeaders(res.headers, gatewayHeaders(d)) };
    }
  }
  // An event stream is relayed whole events at a time, so a failure can end it with an error event.
  const body = stream ? proxiedEventStream(upstream.body, facts, d.remainingMs()).stream : upstream.body;
  return { statusCode: upstream.status, headers: mergeHeaders(responseHeadersFrom(upstream.headers), gatewayHeaders(d)), body };
}

const logProxied = requestLog('proxy');

/** The generic proxy with its request log, for routes that hand some requests to it. */
export const genericProxy = compose([logProxied], forwardToProvider);

/** `/v1/{any provider path}` with the methods the proxy forwards. */
export const proxyRoutes: Route[] = (['GET', 'POST', 'PUT', 'DELETE'] as const).map((method) => ({
  method,
  path: '/v1/{proxy+}',
  access: 'gateway',
  name: 'proxy',
  use: [logProxied],
  handler: forwardToProvider,
}));

/**
 * For a group whose prefix is also a provider's path (`/v1/rerank`, ...): a path or method
 * the group has no route for is proxied when the request names a provider; without one it
 * stays the group's 404/405.
 */
export const proxyUnrouted: Passthrough = {
  routes: proxyRoutes,
  takes: (headers, routed) => !routed && namesAnyProvider(headers),
};

/**
 * For the assistants and fine-tuning groups, whose own implementation runs work later and so
 * needs a managed provider: a request that names a provider per request (raw key or config)
 * goes to that provider's own API instead, whatever the path; so do unrouted paths.
 */
export const proxyUnroutedOrPerRequest: Passthrough = {
  routes: proxyRoutes,
  takes: (headers, routed) => namesPerRequestProvider(headers) || (!routed && namesAnyProvider(headers)),
};
