import type { ErrorType } from '../shared/errors';
import type { HttpResponse } from '../shared/http/types';
import { json } from '../shared/http/response';
import { errorResponse, mergeHeaders } from '../shared/http/response';
import { isOpenAIErrorBody } from '../providers/_shared/error-body';
import { readProviderError } from './provider-failure';
import { responseHeadersFrom } from './headers';
import { gatewayHeaders, type Dispatched } from './pipeline';
import type { Leaf } from './routing';
import type { ResolvedTarget } from './target';

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

const OPENAI_TYPE_BY_STATUS: Record<number, ErrorType> = {
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  429: 'rate_limit_error',
};

/**
 * A failed chat or Responses call in OpenAI's error shape, so the OpenAI SDKs show the
 * provider's message: a gateway error as it is; a provider's answer unchanged when it is
 * OpenAI-shaped already; any other (watsonx's `{errors: [...]}`, Bedrock's `{message}`, an
 * HTML page) as `{error: {message, type, param, code}}` with the provider's status.
 */
export async function openAIFailureResponse(d: Dispatched): Promise<HttpResponse> {
  const upstream = d.routing.result.response;
  if (!upstream) return failureResponse(d);
  const { raw, message, code } = await readProviderError(upstream);
  if (isOpenAIErrorBody(raw))
    return { statusCode: upstream.status, headers: mergeHeaders(responseHeadersFrom(upstream.headers), gatewayHeaders(d)), body: raw };
  const headers = gatewayHeaders(d);
  const retryAfter = upstream.headers['retry-after'];
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
  const status = upstream.status;
  const type = OPENAI_TYPE_BY_STATUS[status] ?? (status < 500 ? 'invalid_request_error' : 'upstream_error');
  const error = { message: message ?? `${d.resolved.adapter.name} answered with status ${status}.`, type, param: null, code: code ?? null };
  return json(status, { error }, headers);
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

/**
 * The route's translation of a successful JSON answer: made within the attempt (dispatch's
 * `translateJson`), else now (an answer from the cache).
 */
export async function translatedJson<T>(d: Dispatched, translate: (json: unknown, resolved: ResolvedTarget, leaf: Leaf) => T): Promise<T> {
  const response = d.routing.result.response!;
  return 'translated' in response ? (response.translated as T) : translate(await upstreamJson(d), d.resolved, d.routing.leaf);
}

export function jsonResponse(d: Dispatched, body: unknown, status = 200): HttpResponse {
  return json(status, body, gatewayHeaders(d));
}
