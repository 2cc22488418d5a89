import type { GatewayRequest, HttpResponse } from '../shared/http/types';
import { json, mergeHeaders } from '../shared/http/response';
import { SSE_HEADERS } from '../shared/http/sse';
import { parseInput, z } from '../shared/validation';
import type { ChatRequest } from '../providers/types';
import { chatCall, type ChatOutcome } from './chat-core';
import { requestFacts } from './request-log';
import { openAIFailureResponse } from './responses';

/** A content part: its type, and for the types the translators read, what they read. */
const contentPart = z.looseObject({ type: z.string() }).check(
  z.refine((p) => p.type !== 'text' || typeof p.text === 'string', { message: 'a text part needs `text` (a string)', path: ['text'] }),
  z.refine((p) => p.type !== 'image_url' || typeof (p.image_url as { url?: unknown } | undefined)?.url === 'string', {
    message: 'an image_url part needs `image_url.url` (a string)',
    path: ['image_url', 'url'],
  }),
);
const content = z.optional(z.nullable(z.union([z.string(), z.array(contentPart)])));
/** `{name}` of a function tool, a tool call or a forced tool choice. */
const named = z.looseObject({ name: z.string() });
/** A tool of type 'function' (or of no type) has `function.name`; other types pass to providers that know them. */
const isFunctionTool = (t: { type?: unknown }) => t.type === undefined || t.type === 'function';
const message = z
  .looseObject({
    role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
    content,
    tool_calls: z.optional(
      z.nullable(z.array(z.looseObject({ id: z.string(), function: z.looseObject({ name: z.string(), arguments: z.optional(z.nullable(z.string())) }) }))),
    ),
    tool_call_id: z.optional(z.string()),
  })
  .check(
    z.refine((m) => m.role === 'assistant' || m.role === 'function' || (m.content !== undefined && m.content !== null), {
      message: 'this role needs `content` (a string or an array of parts)',
      path: ['content'],
    }),
    z.refine((m) => m.role !== 'tool' || m.tool_call_id !== undefined, { message: 'a tool message needs `tool_call_id`', path: ['tool_call_id'] }),
  );

/**
 * The minimum the gateway itself needs to route and translate, with the shapes of what its
 * translators read (messages, tools, tool choice); everything else is the provider's to judge
 * (its 400 passes through), so new OpenAI fields keep working.
 */
const chatSchema = z.looseObject({
  model: z.optional(z.string().check(z.minLength(1))),
  messages: z.array(message).check(z.minLength(1)),
  stream: z.optional(z.nullable(z.boolean())),
  max_tokens: z.optional(z.nullable(z.int().check(z.gte(1)))),
  max_completion_tokens: z.optional(z.nullable(z.int().check(z.gte(1)))),
  tools: z.optional(
    z.nullable(
      z.array(
        z
          .looseObject({ type: z.optional(z.string()), function: z.optional(named) })
          .check(z.refine((t) => !isFunctionTool(t) || t.function !== undefined, { message: 'a function tool needs `function.name`', path: ['function'] })),
      ),
    ),
  ),
  tool_choice: z.optional(
    z.nullable(
      z.union([
        z.string(),
        z
          .looseObject({ type: z.optional(z.string()), function: z.optional(named) })
          .check(
            z.refine((t) => !isFunctionTool(t) || t.function !== undefined, { message: 'a function tool choice needs `function.name`', path: ['function'] }),
          ),
      ]),
    ),
  ),
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
