/**
 * Azure AI Foundry: chat and embeddings through the Azure AI model inference API, and rerank
 * for Cohere deployments (issue «Unified rerank» item 2).
 *
 * Model inference (chat, embeddings): `POST {root}/chat/completions` and `{root}/embeddings`
 * with `?api-version=` (`x-gateway-azure-api-version`, default 2024-05-01-preview). The root
 * is `https://{resource}.services.ai.azure.com/models`, or the custom host as given (a
 * serverless endpoint `https://{name}.{region}.models.ai.azure.com`, or a Foundry `/models`
 * URL). The body is OpenAI's with `model` naming the deployment; answers and streams are
 * OpenAI's and pass through. `extra-parameters: pass-through` is sent, so a field outside the
 * common API reaches the model, which honours or refuses it, instead of the API's default
 * `error` for any extra field. There is no model list.
 * Source: https://learn.microsoft.com/rest/api/aifoundry/modelinference/ (GetChatCompletions, GetEmbeddings)
 *
 * Rerank: the deployments speak Cohere's v2 rerank API, so the wire format is Cohere's.
 *
 * URL:
 * - default: `https://{resource}.services.ai.azure.com/providers/cohere/v2/rerank`, the
 *   resource from `x-gateway-azure-resource-name` (a DNS label; SSRF guard);
 * - custom host (a serverless endpoint such as `https://{name}.{region}.models.ai.azure.com`,
 *   or any Cohere-compatible root): `{custom host}/v2/rerank`, a trailing `/v1` or `/v2`
 *   segment of the host removed first.
 * The generic proxy appends the caller's path to `https://{resource}.services.ai.azure.com`
 * (or the custom host).
 *
 * Auth: the key as `Authorization: Bearer <key>` (serverless endpoints and Foundry accept it;
 * an Entra ID token goes the same way).
 *
 * Body: a `cohere.` prefix on the model (the gateway's vendor-qualified name, e.g.
 * `cohere.rerank-v3.5`) is stripped upstream. Sent: model, query, documents (objects
 * flattened to their `text`), top_n, max_tokens_per_doc, priority. Dropped (Cohere v2 has no
 * such field): return_documents (documents are filled from the request instead),
 * rank_fields, truncation, parameters. Response: `results[].relevance_score`, the
 * provider's `id`, `meta.billed_units.search_units`.
 */
import { SETTING } from '../../shared/provider-table';
import { requireSetting, rootUrl } from '../_shared/cloud-common';
import { compact, jsonPost, requireKey } from '../_shared/openai-shape';
import { withoutCacheMarks } from '../_shared/cache-marks';
import { docText, rerankResult } from '../_shared/rerank-shape';
import type { ChatCompletion, ProviderAdapter, ProviderTarget, RerankRequest } from '../types';

/** The model inference API version sent when `x-gateway-azure-api-version` is absent. */
export const AZURE_AI_INFERENCE_API_VERSION = '2024-05-01-preview';

const VENDOR_PREFIX = /^cohere\./i;

function resourceRoot(target: ProviderTarget): string {
  const resource = requireSetting(target.azure?.resourceName, SETTING.azure_resource_name, 'Azure AI resource name');
  return `https://${resource.toLowerCase()}.services.ai.azure.com`;
}

const baseUrl = (target: ProviderTarget): string => rootUrl(target, () => resourceRoot(target));

export function azureAIRerankUrl(target: ProviderTarget): string {
  const custom = target.customHost?.trim();
  if (custom) return `${custom.replace(/\/+$/, '').replace(/\/v[12]$/, '')}/v2/rerank`;
  return `${resourceRoot(target)}/providers/cohere/v2/rerank`;
}

const authHeaders = (target: ProviderTarget) => ({ authorization: `Bearer ${requireKey(target, 'Azure AI').trim()}` });

/** `{root}/{route}?api-version=…` of the model inference API. */
export function azureAIInferenceUrl(target: ProviderTarget, route: 'chat/completions' | 'embeddings'): string {
  const custom = target.customHost?.trim();
  const root = custom ? custom.replace(/\/+$/, '') : `${resourceRoot(target)}/models`;
  return `${root}/${route}?api-version=${encodeURIComponent(target.azure?.apiVersion?.trim() || AZURE_AI_INFERENCE_API_VERSION)}`;
}

const inferenceHeaders = (target: ProviderTarget) => ({ ...authHeaders(target), 'extra-parameters': 'pass-through' });

/** The model as the deployment knows it: `cohere.rerank-v3.5` -> `rerank-v3.5`. */
export const azureAIModel = (model: string): string => model.replace(VENDOR_PREFIX, '');

function rerankBody(body: RerankRequest): Record<string, unknown> {
  return compact({
    model: azureAIModel(body.model),
    query: body.query,
    documents: body.documents.map(docText),
    top_n: body.top_n,
    max_tokens_per_doc: body.max_tokens_per_doc,
    priority: body.priority,
  });
}

type CohereRerankResponse = {
  id?: string;
  results?: Array<{ index: number; relevance_score: number; document?: unknown }>;
  meta?: { billed_units?: { search_units?: number } };
};

export const azureAI: ProviderAdapter = {
  slug: 'azure-ai',
  name: 'Azure AI',
  requiredSettings: ['api_key', 'azure_resource_name'],
  baseUrl,
  authHeaders,
  models: false,
  chat: {
    request: (body, target) => jsonPost(azureAIInferenceUrl(target, 'chat/completions'), withoutCacheMarks(body), inferenceHeaders(target), target),
    response: (upstream) => upstream as ChatCompletion,
  },
  embeddings: {
    request: (body, target) => jsonPost(azureAIInferenceUrl(target, 'embeddings'), body, inferenceHeaders(target), target),
  },
  rerank: {
    request: (body, target) => jsonPost(azureAIRerankUrl(target), rerankBody(body), authHeaders(target), target),
    response(upstream, body, ctx) {
      const r = (upstream ?? {}) as CohereRerankResponse;
      const items = (r.results ?? []).map((x) => ({ index: x.index, score: x.relevance_score, document: x.document }));
      return rerankResult('azure-ai', items, body, ctx, { id: r.id, searchUnits: r.meta?.billed_units?.search_units });
    },
  },
};
