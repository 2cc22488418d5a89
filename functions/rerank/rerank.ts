/**
 * `POST /v1/rerank`: validate, route through the gateway
 * pipeline (configs with fallback/retries, managed providers, custom hosts, request log),
 * translate with the provider's rerank adapter, then normalise the answer.
 * Provider errors come back with their own status and body.
 *
 * Field rules (each adapter's header has the details; a field a provider lacks is dropped):
 * | provider | sent besides model, query, documents                                        | dropped                                                      |
 * |----------|------------------------------------------------------------------------------|--------------------------------------------------------------|
 * | cohere   | top_n, max_tokens_per_doc, priority (objects sent as their text)             | return_documents, rank_fields, truncation, parameters         |
 * | jina     | top_n, return_documents (default false)                                       | max_tokens_per_doc, priority, rank_fields, truncation, parameters |
 * | voyage   | top_n as top_k, return_documents, truncation                                  | max_tokens_per_doc, priority, rank_fields, parameters         |
 * | pinecone | top_n, return_documents (default false), rank_fields, parameters, truncation as parameters.truncate; strings as {id: doc_i, text} | max_tokens_per_doc, priority |
 * | bedrock  | top_n as numberOfResults, parameters as additionalModelRequestFields, model as ARN | return_documents, max_tokens_per_doc, priority, rank_fields, truncation |
 * | azure-ai | model without `cohere.`, top_n, max_tokens_per_doc, priority                 | return_documents, rank_fields, truncation, parameters         |
 * Documents a provider does not echo are filled from the request (normalise.ts).
 */
import { badRequest } from '../shared/errors';
import type { GatewayRequest, HttpResponse } from '../shared/http/types';
import { newId } from '../shared/ids';
import type { Leaf } from '../gateway/routing';
import { parseGatewayOptions } from '../gateway/headers';
import { dispatch, withOverrides } from '../gateway/pipeline';
import { requestFacts } from '../gateway/request-log';
import { failureResponse, jsonResponse, succeeded, translatedJson } from '../gateway/responses';
import type { ResolvedTarget } from '../gateway/target';
import { translateUpstream } from '../gateway/upstream-body';
import type { RerankRequest } from '../providers/types';
import { finaliseRerank } from './normalise';
import { parseEffectiveBody, parseRerankBody } from './schema';
import { spanFields } from './tracing';

export const RERANK_ID_PREFIX = 'rerank-';

/** The body one config target receives: its `override_params` applied and re-checked. */
const effectiveBody = (body: RerankRequest, leaf: Leaf): RerankRequest =>
  leaf.node.override_params ? parseEffectiveBody(withOverrides(body as unknown as Record<string, unknown>, leaf)) : body;

/** `POST /v1/rerank`, under the `requestLog` middleware. */
export async function rerank(req: GatewayRequest): Promise<HttpResponse> {
  const facts = requestFacts(req);
  facts.extra = { ...spanFields(req.headers) };
  // Set before validation so a rejected request is logged with its metadata too.
  facts.metadata = parseGatewayOptions(req.headers).metadata;
  const body = parseRerankBody(req.json());
  const id = newId(RERANK_ID_PREFIX);
  const translate = (json: unknown, { adapter }: ResolvedTarget, leaf: Leaf) => {
    const effective = effectiveBody(body, leaf);
    const ctx = { model: effective.model, id, created: Math.floor(Date.now() / 1000), includeUsage: false };
    return translateUpstream(adapter.slug, () => finaliseRerank(adapter.rerank!.response(json, effective, ctx), effective, { provider: adapter.slug, id }));
  };
  const d = await dispatch({
    req,
    log: facts,
    model: body.model,
    cacheRoute: 'rerank',
    readsJson: true,
    translateJson: translate,
    params: body as unknown as Record<string, unknown>,
    build({ adapter, target }, leaf) {
      if (!adapter.rerank) throw badRequest(`Provider '${adapter.slug}' does not support rerank.`, 'x-gateway-provider', 'unsupported_operation');
      return adapter.rerank.request(effectiveBody(body, leaf), target);
    },
  });
  const effective = effectiveBody(body, d.routing.leaf);
  Object.assign(facts, d.facts, { model: effective.model });
  if (!succeeded(d)) return failureResponse(d);
  const out = await translatedJson(d, translate);
  facts.extra = { ...facts.extra, search_units: out.usage.search_units, documents: effective.documents.length };
  return jsonResponse(d, out);
}
