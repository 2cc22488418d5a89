import type { GatewayRequest, HttpResponse } from '../shared/http/types';
import { json, mergeHeaders } from '../shared/http/response';
import { SSE_HEADERS } from '../shared/http/sse';
import { parseInput, z } from '../shared/validation';
import type { ChatRequest } from '../providers/types';
import { chatCall, type ChatOutcome } from './chat-core';
import { requestFacts } from './request-log';
import { openAIFailureResponse } from './responses';

/**
 * The minimum the gateway itself needs to route and translate; everything else is the
 * provider's to judge (its 400 passes through), so new OpenAI fields keep working.
 */
const chatSchema = z.looseObject({
  model: z.optional(z.string().check(z.minLength(1))),
  messages: z.array(z.looseObject({ role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']) })).check(z.minLength(1)),
  stream: z.optional(z.nullable(z.boolean())),
  max_tokens: z.optional(z.nullable(z.int().check(z.gte(1)))),
  max_completion_tokens: z.optional(z.nullable(z.int().check(z.gte(1)))),
});

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
