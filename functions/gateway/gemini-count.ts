/**
 * `:countTokens` of the Gemini API on any provider: the request, already parsed into chat,
 * is counted by the token-count module (the provider's own count API, the model's tokenizer
 * or an estimate, as `x-gateway-token-count-method` says) and answered in Google's shape.
 */
import { json } from '../shared/http/response';
import type { GatewayRequest, HttpResponse } from '../shared/http/types';
import type { ChatRequest } from '../providers/types';
import { requestFacts } from './request-log';
import { reachableProviders } from './target';
import { countChatTokens } from './token-count';

/**
 * Whether every target of the request is Google's Gemini API (managed providers resolved):
 * only then do Gemini-only fields (`safetySettings`) apply.
 */
export async function reachesGoogleOnly(req: GatewayRequest): Promise<boolean> {
  const providers = await reachableProviders(req);
  return providers.every((p) => p === 'google');
}

/** `:countTokens` for a request already parsed into chat: `{totalTokens}`. */
export async function countGeminiTokens(req: GatewayRequest, chat: ChatRequest): Promise<HttpResponse> {
  const counted = await countChatTokens(req, chat, requestFacts(req));
  return json(200, { totalTokens: counted.tokens }, counted.headers);
}
