import { badRequest } from '../shared/errors';
import type { GatewayRequest, HttpResponse } from '../shared/http/types';
import { parseInput, z } from '../shared/validation';
import type { EmbeddingsRequest } from '../providers/types';
import { dispatch, withOverrides } from './pipeline';
import { requestFacts } from './request-log';
import { failureResponse, jsonResponse, succeeded, upstreamJson } from './responses';

const embeddingsSchema = z.looseObject({
  model: z.optional(z.string().check(z.minLength(1))),
  input: z.union([
    z.string(),
    z.array(z.string()).check(z.minLength(1)),
    z.array(z.number()).check(z.minLength(1)),
    z.array(z.array(z.number())).check(z.minLength(1)),
  ]),
  encoding_format: z.optional(z.enum(['float', 'base64'])),
  dimensions: z.optional(z.int().check(z.gte(1))),
});

/** `POST /v1/embeddings`, under the `requestLog` middleware. */
export async function embeddings(req: GatewayRequest): Promise<HttpResponse> {
  const facts = requestFacts(req);
  const body = parseInput(embeddingsSchema, req.json()) as EmbeddingsRequest;
  let effective = body;
  const d = await dispatch({
    req,
    log: facts,
    model: body.model,
    cacheRoute: 'embeddings',
    readsJson: true,
    params: body,
    build({ adapter, target }, leaf) {
      if (!adapter.embeddings) throw badRequest(`Provider '${adapter.slug}' does not support embeddings.`, 'x-gateway-provider', 'unsupported_operation');
      effective = withOverrides(body, leaf);
      if (!effective.model) throw badRequest('`model` is required (in the body or the config override_params).', 'model', 'missing_model');
      return adapter.embeddings.request(effective, target);
    },
  });
  Object.assign(facts, d.facts, { model: effective.model });
  if (!succeeded(d)) return failureResponse(d);
  const parsed = await upstreamJson(d);
  const adapter = d.resolved.adapter.embeddings!;
  const out = adapter.response
    ? adapter.response(parsed, { model: effective.model, id: '', created: Math.floor(Date.now() / 1000), includeUsage: false }, effective)
    : (parsed as { usage?: { prompt_tokens: number; total_tokens: number } });
  const usage = (out as { usage?: { prompt_tokens: number; total_tokens: number } }).usage;
  if (usage) facts.usage = { prompt_tokens: usage.prompt_tokens, completion_tokens: 0, total_tokens: usage.total_tokens };
  return jsonResponse(d, out);
}

/** The body schema, for the OpenAPI document (infra/openapi). */
export { embeddingsSchema };
