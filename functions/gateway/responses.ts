import type { HttpResponse } from '../shared/http/types';
import { json } from '../shared/http/response';
import { upstreamError } from '../shared/errors';
import { readBody } from '../shared/net/http-client';
import { errorResponse, mergeHeaders } from '../shared/http/response';
import { responseHeadersFrom } from './headers';
import { gatewayHeaders, type Dispatched } from './pipeline';

/** Largest non-streamed provider body the gateway will buffer for translation. */
export const MAX_TRANSLATED_BODY = 20 * 1024 * 1024;

/**
 * The routed call did not succeed: a gateway error (network, timeout, blocked host) in
 * our shape, or the provider's own status and body passed through as received.
 */
export function failureResponse(d: Dispatched): HttpResponse {
  const { result } = d.routing;
  if (result.error) {
    const res = errorResponse(result.error);
    return { ...res, headers: mergeHeaders(res.headers, gatewayHeaders(d)) };
  }
  const upstream = result.response!;
  return { statusCode: upstream.status, headers: mergeHeaders(responseHeadersFrom(upstream.headers), gatewayHeaders(d)), body: upstream.body };
}

export const succeeded = (d: Dispatched) => d.routing.result.response !== undefined && d.routing.result.response.status < 400;

/**
 * Buffer and parse a successful provider JSON body (bounded): a body that is not JSON is a
 * 502 `invalid_upstream_response`; one too large or cut short keeps readBody's own 502.
 */
export async function upstreamJson(d: Dispatched): Promise<unknown> {
  const body = await readBody(d.routing.result.response!.body, MAX_TRANSLATED_BODY);
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw upstreamError(`Provider '${d.resolved.adapter.slug}' returned a body that is not valid JSON.`, 'invalid_upstream_response');
  }
}

export function jsonResponse(d: Dispatched, body: unknown, status = 200): HttpResponse {
  return json(status, body, gatewayHeaders(d));
}
