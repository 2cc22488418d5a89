import { badRequest } from '../shared/errors';
import { mergeHeaders } from '../shared/http/response';
import type { GatewayRequest, HttpResponse } from '../shared/http/types';
import { responseHeadersFrom } from './headers';
import { dispatch, gatewayHeaders } from './pipeline';
import { proxyRequest } from './proxy';
import { requestFacts } from './request-log';
import { failureResponse, succeeded } from './responses';

type AudioOperation = 'speech' | 'transcriptions' | 'translations';

/**
 * Audio routes (under the `requestLog` middleware) pass the body through (JSON for speech,
 * multipart for transcriptions) to providers that serve the OpenAI audio API; audio bytes
 * stream back unchanged.
 */
function audioRoute(operation: AudioOperation) {
  return async (req: GatewayRequest): Promise<HttpResponse> => {
    const facts = requestFacts(req);
    const d = await dispatch({
      req,
      log: facts,
      build: ({ adapter, target }) => {
        if (!adapter.audio?.[operation]) {
          throw badRequest(`Provider '${adapter.slug}' does not support audio ${operation}.`, 'x-gateway-provider', 'unsupported_operation');
        }
        const upstream = proxyRequest(req, adapter, target, `audio/${operation}`);
        // Some providers (Azure) put audio under a per-deployment URL.
        const url = adapter.audio.url?.(operation, target);
        return url ? { ...upstream, url: url + (req.rawQuery ? `${url.includes('?') ? '&' : '?'}${req.rawQuery}` : '') } : upstream;
      },
    });
    Object.assign(facts, d.facts);
    if (!succeeded(d)) return failureResponse(d);
    const upstream = d.routing.result.response!;
    return { statusCode: upstream.status, headers: mergeHeaders(responseHeadersFrom(upstream.headers), gatewayHeaders(d)), body: upstream.body };
  };
}

export const speech = audioRoute('speech');
export const transcriptions = audioRoute('transcriptions');
export const translations = audioRoute('translations');
