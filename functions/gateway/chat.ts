import { badRequest, upstreamError } from '../shared/errors';
import type { GatewayRequest, HttpResponse } from '../shared/http/types';
import { newId } from '../shared/ids';
import { parseInput, z } from '../shared/validation';
import type { ChatRequest, TranslateContext } from '../providers/types';
import { dispatch, withOverrides } from './pipeline';
import { withRequestLog, type RequestFacts } from './request-log';
import { failureResponse, jsonResponse, sseResponse, succeeded, upstreamJson } from './responses';
import { passThroughStream, translatedStream } from './streaming';
import { ChatGuardrails, completionText } from './guardrails';
import { reframeOpenAIStream } from '../providers/_shared/openai-compatible';

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

/** Run a chat completion through the pipeline; used by the route and by features (prompts, runs). */
export async function runChat(req: GatewayRequest, body: ChatRequest, facts: RequestFacts): Promise<HttpResponse> {
  const stream = body.stream === true;
  facts.stream = stream;
  let effective: ChatRequest = body;
  const guards = new ChatGuardrails(req, facts);
  const d = await dispatch({
    req,
    facts,
    model: body.model,
    cacheRoute: 'chat.completions',
    params: body,
    async beforeAttempt({ adapter }, leaf) {
      if (!adapter.chat) throw badRequest(`Provider '${adapter.slug}' does not support chat completions.`, 'x-gateway-provider', 'unsupported_operation');
      effective = withOverrides(body, leaf);
      if (!effective.model) throw badRequest('`model` is required (in the body or the config override_params).', 'model', 'missing_model');
      effective = await guards.checkInput(leaf, effective);
    },
    build: ({ adapter, target }) => adapter.chat!.request(effective, target),
  });
  facts.model = effective.model;
  if (!succeeded(d)) return failureResponse(d, facts);

  const chat = d.resolved.adapter.chat!;
  const ctx: TranslateContext = {
    model: effective.model,
    id: newId('chatcmpl-'),
    created: Math.floor(Date.now() / 1000),
    includeUsage: effective.stream_options?.include_usage === true,
  };
  const upstream = d.routing.result.response!;
  const leaf = d.routing.leaf;
  facts.status = guards.status();
  if (stream) {
    const checksOutput = Boolean(leaf.node.output_guardrails?.length);
    const finale = checksOutput || guards.ran
      ? async (text: string) => {
          await guards.checkOutput(leaf, text, ctx.model);
          return { id: ctx.id, object: 'chat.completion.chunk' as const, created: ctx.created, model: ctx.model, choices: [], hook_results: guards.hookResults() };
        }
      : undefined;
    const translator = chat.stream ? chat.stream(ctx) : finale ? reframeOpenAIStream(ctx, d.resolved.adapter.name) : undefined;
    const sse = translator
      ? translatedStream(upstream.body, translator, facts, d.remainingMs(), finale)
      : passThroughStream(upstream.body, facts, d.remainingMs());
    return { ...sseResponse(d, sse), statusCode: guards.status() };
  }
  let parsed: unknown;
  try {
    parsed = await upstreamJson(d);
  } catch {
    facts.status = 502;
    throw upstreamError(`Provider '${d.resolved.adapter.slug}' returned a body that is not valid JSON.`, 'invalid_upstream_response');
  }
  const completion = chat.response(parsed, ctx);
  facts.usage = completion.usage;
  await guards.checkOutput(leaf, completionText(completion), ctx.model);
  facts.status = guards.status();
  return jsonResponse(d, guards.ran ? { ...completion, hook_results: guards.hookResults() } : completion, guards.status());
}

export const chatCompletions = (req: GatewayRequest) =>
  withRequestLog(req, 'chat.completions', (facts) => runChat(req, parseChatBody(req), facts));

/** The body schema, for the OpenAPI document (infra/openapi). */
export { chatSchema };
