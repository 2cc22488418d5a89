import type { GatewayRequest, HttpResponse } from '../shared/http/types';
import { json, mergeHeaders } from '../shared/http/response';
import { SSE_HEADERS } from '../shared/http/sse';
import { parseInput } from '../shared/validation';
import { chatSchema } from '../shared/chat-schema';
import type { ChatRequest } from '../providers/types';
import { chatCall, type ChatOutcome } from './chat-core';
import { requestFacts } from './request-log';
import { openAIFailureResponse } from './responses';

export function parseChatBody(req: GatewayRequest): ChatRequest {
  const body = parseInput(chatSchema, req.json()) as ChatRequest;
  return body;
}

/** A chat outcome as the HTTP answer: JSON, the SSE stream, or the failure in OpenAI's error shape. */
export async function chatResponse(outcome: ChatOutcome): Promise<HttpResponse> {
  switch (outcome.kind) {
    case 'failure':
      return openAIFailureResponse(outcome.dispatched);
    case 'completion':
      return json(outcome.status, outcome.completion, outcome.headers);
    case 'stream':
      return { statusCode: outcome.status, headers: mergeHeaders(SSE_HEADERS, outcome.headers), body: outcome.stream.sse().stream };
  }
}

/** `POST /v1/chat/completions`, under the `requestLog` middleware. */
export const chatCompletions = async (req: GatewayRequest) => chatResponse(await chatCall({ req, body: parseChatBody(req), log: requestFacts(req) }));

/** The body schema, for the OpenAPI document (infra/openapi). */
export { chatSchema };
