import { badRequest } from '../shared/errors';
import type { CallerRequest, GatewayRequest, HttpResponse } from '../shared/http/types';
import { parseInput, z } from '../shared/validation';
import { embeddingsInput } from '../shared/chat-schema';
import type { Embeddings, EmbeddingsRequest } from '../providers/types';
import { dispatch, withOverrides, type Dispatched } from './pipeline';
import { requestFacts } from './request-log';
import type { RequestFacts } from '../spend/request-record';
import { failureResponse, jsonResponse, succeeded, translatedJson } from './responses';
import type { ResolvedTarget } from './target';
import { readableEmbeddings, translateUpstream } from './upstream-body';

const embeddingsSchema = z.looseObject({
  model: z.optional(z.string().check(z.minLength(1))),
  input: embeddingsInput,
  encoding_format: z.optional(z.enum(['float', 'base64'])),
  dimensions: z.optional(z.int().check(z.gte(1))),
});

/** An embeddings call's outcome: the provider's failure (unread), or the OpenAI-shaped answer. */
export type EmbeddingsOutcome = { ok: false; d: Dispatched } | { ok: true; d: Dispatched; out: Embeddings };

/** One embeddings call through routing, limits and translation; fills the request's log facts. Used by the Gemini routes too. */
export async function embeddingsCall(req: CallerRequest, facts: RequestFacts, body: EmbeddingsRequest): Promise<EmbeddingsOutcome> {
  let effective = body;
  const translate = (json: unknown, { adapter }: ResolvedTarget): Embeddings =>
    translateUpstream(adapter.slug, () =>
      readableEmbeddings(
        (adapter.embeddings!.response
          ? adapter.embeddings!.response(json, { model: effective.model, id: '', created: Math.floor(Date.now() / 1000), includeUsage: false }, effective)
          : json) as Embeddings,
      ),
    );
  const d = await dispatch({
    req,
    log: facts,
    model: body.model,
    cacheRoute: 'embeddings',
    readsJson: true,
    translateJson: translate,
    params: body,
    build({ adapter, target }, leaf) {
      if (!adapter.embeddings) throw badRequest(`Provider '${adapter.slug}' does not support embeddings.`, 'x-gateway-provider', 'unsupported_operation');
      effective = withOverrides(body, leaf);
      if (!effective.model) throw badRequest('`model` is required (in the body or the config override_params).', 'model', 'missing_model');
      return adapter.embeddings.request(effective, target);
    },
  });
  Object.assign(facts, d.facts, { model: effective.model });
  if (!succeeded(d)) return { ok: false, d };
  const out = await translatedJson(d, translate);
  const usage = (out as { usage?: { prompt_tokens: number; total_tokens: number } }).usage;
  if (usage) facts.usage = { prompt_tokens: usage.prompt_tokens, completion_tokens: 0, total_tokens: usage.total_tokens };
  return { ok: true, d, out };
}

/** `POST /v1/embeddings`, under the `requestLog` middleware. */
export async function embeddings(req: GatewayRequest): Promise<HttpResponse> {
  const body = parseInput(embeddingsSchema, req.json()) as EmbeddingsRequest;
  const outcome = await embeddingsCall(req, requestFacts(req), body);
  return outcome.ok ? jsonResponse(outcome.d, outcome.out) : failureResponse(outcome.d);
}

/** The body schema, for the OpenAPI document (infra/openapi). */
export { embeddingsSchema };
