/** Errors of the Gemini routes in Google's shape: the gateway's own and a provider's. */
import { mergeHeaders } from '../shared/http/response';
import type { GatewayError } from '../shared/errors';
import type { HttpResponse } from '../shared/http/types';
import { googleErrorResponse } from '../formats/gemini/errors';
import { gatewayHeaders, type Dispatched } from './pipeline';
import { readProviderFailure } from './provider-failure';

/** A gateway error as Google answers one (same status, the gateway's headers kept). */
export const googleError = (error: GatewayError, headers: Record<string, string> = {}): HttpResponse =>
  googleErrorResponse({ status: error.status, message: error.message, param: error.param, headers: mergeHeaders(error.headers, headers) });

/** A provider's failure in Google's shape: its status and its message. */
export async function providerFailure(d: Dispatched): Promise<HttpResponse> {
  const headers = gatewayHeaders(d);
  const { error, response } = d.routing.result;
  if (error) return googleError(error, headers);
  const { status, message, retryAfter } = await readProviderFailure(response!, d.resolved.adapter.name);
  return googleErrorResponse({ status, message, headers: retryAfter === undefined ? headers : { ...headers, 'retry-after': retryAfter } });
}
