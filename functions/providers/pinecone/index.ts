/**
 * Pinecone inference rerank, API version 2025-04: POST {base}/rerank with an
 * `Api-Key` header. String documents become `{id: "doc_<i>", text}`; object documents
 * pass as given. Sent: model, query, documents, top_n, return_documents, rank_fields,
 * parameters, and `truncation` as `parameters.truncate` (END / NONE) unless the caller set
 * it there. Dropped (Pinecone has no such field): max_tokens_per_doc, priority.
 * `score` becomes `relevance_score`, `usage.rerank_units` becomes `search_units`.
 */
import { compact, jsonPost, requireKey, resolveBase } from '../_shared/openai-shape';
import { rerankResult } from '../_shared/rerank-shape';
import type { ProviderAdapter, ProviderTarget, RerankRequest } from '../types';

export const PINECONE_API_VERSION = '2025-04';

const baseUrl = (t: ProviderTarget) => resolveBase(t, 'https://api.pinecone.io');
const authHeaders = (t: ProviderTarget) => ({ 'api-key': requireKey(t, 'Pinecone'), 'x-pinecone-api-version': PINECONE_API_VERSION });

function parameters(body: RerankRequest): Record<string, unknown> | undefined {
  const params = { ...body.parameters };
  if (body.truncation !== undefined && params.truncate === undefined) params.truncate = body.truncation ? 'END' : 'NONE';
  return Object.keys(params).length ? params : undefined;
}

type PineconeResponse = {
  data?: Array<{ index: number; score: number; document?: unknown }>;
  usage?: { rerank_units?: number };
};

export const pinecone: ProviderAdapter = {
  slug: 'pinecone',
  name: 'Pinecone',
  baseUrl,
  authHeaders,
  rerank: {
    request: (body, target) =>
      jsonPost(
        `${baseUrl(target)}/rerank`,
        compact({
          model: body.model,
          query: body.query,
          documents: body.documents.map((d, i) => (typeof d === 'string' ? { id: `doc_${i}`, text: d } : d)),
          top_n: body.top_n,
          // Pinecone returns documents by default; the unified default is not to.
          return_documents: body.return_documents ?? false,
          rank_fields: body.rank_fields,
          parameters: parameters(body),
        }),
        authHeaders(target),
        target,
      ),
    response(upstream, body, ctx) {
      const r = upstream as PineconeResponse;
      const items = (r.data ?? []).map((x) => ({ index: x.index, score: x.score, document: x.document }));
      return rerankResult('pinecone', items, body, ctx, { searchUnits: r.usage?.rerank_units });
    },
  },
};
