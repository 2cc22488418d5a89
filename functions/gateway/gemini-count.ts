/**
 * `:countTokens` of the Gemini API, apart from the route so the count's source can change
 * alone: today Google's own count (the request forwarded unchanged to a Google target),
 * other targets refused.
 */
import { badRequest } from '../shared/errors';
import { mergeHeaders } from '../shared/http/response';
import type { GatewayRequest, HttpResponse } from '../shared/http/types';
import type { ChatRequest } from '../providers/types';
import { providerFailure } from './gemini-failure';
import { responseHeadersFrom } from './headers';
import { dispatch, gatewayHeaders } from './pipeline';
import { proxyRequest } from './proxy';
import { requestFacts } from './request-log';
import { reachableProviders } from './target';

/**
 * Whether every target of the request is Google's Gemini API (managed providers resolved):
 * only then do Gemini-only fields (`safetySettings`) and the native token count apply.
 */
export async function reachesGoogleOnly(req: GatewayRequest): Promise<boolean> {
  const providers = await reachableProviders(req);
  return providers.every((p) => p === 'google');
}

/**
 * `:countTokens` for a request already parsed into chat. For now the count is Google's own
 * (the request forwarded to a Google target unchanged); other targets are refused.
 */
export async function countGeminiTokens(req: GatewayRequest, chat: ChatRequest): Promise<HttpResponse> {
  if (!(await reachesGoogleOnly(req))) {
    throw badRequest(
      `Token counting (:countTokens) is available on Google Gemini targets only for now; '${chat.model}' is routed elsewhere.`,
      'model',
      'unsupported_operation',
    );
  }
  const log = requestFacts(req);
  const d = await dispatch({
    req,
    log,
    model: chat.model,
    params: chat,
    build: ({ adapter, target }) => proxyRequest(req, adapter, target, `models/${chat.model}:countTokens`),
  });
  Object.assign(log, d.facts, { model: chat.model });
  const { error, response } = d.routing.result;
  if (error || response!.status >= 400) return providerFailure(d);
  return { statusCode: response!.status, headers: mergeHeaders(responseHeadersFrom(response!.headers), gatewayHeaders(d)), body: response!.body };
}
