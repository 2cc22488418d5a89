import type { HttpResponse } from '../shared/http/types';
import { json } from '../shared/http/response';
import { errorResponse, mergeHeaders } from '../shared/http/response';
import { responseHeadersFrom } from './headers';
import { gatewayHeaders, type Dispatched } from './pipeline';

import { MAX_TRANSLATED_BODY, readJsonBody } from './upstream-body';

export { MAX_TRANSLATED_BODY };

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
 * The successful provider JSON body: parsed within the attempt when the route dispatched
 * with `readsJson` (so its failures were the attempt's), else buffered and parsed here.
 */
export async function upstreamJson(d: Dispatched): Promise<unknown> {
  const response = d.routing.result.response!;
  return 'json' in response ? response.json : (await readJsonBody(response, d.resolved.adapter.slug)).json;
}

export function jsonResponse(d: Dispatched, body: unknown, status = 200): HttpResponse {
  return json(status, body, gatewayHeaders(d));
}
