/**
 * Jina AI rerank: POST {base}/rerank, Cohere-like body and response.
 * Sent: model, query, documents (as text), top_n, return_documents. Dropped (Jina has no
 * such field): max_tokens_per_doc, priority, rank_fields, truncation, parameters.
 * `usage.total_tokens` is reported as `search_units` (as Portkey does).
 */
import { compact, jsonPost, requireKey, resolveBase } from '../_shared/openai-shape';
import { docText, rerankResult } from '../_shared/rerank-shape';
import type { ProviderAdapter, ProviderTarget } from '../types';

const baseUrl = (t: ProviderTarget) => resolveBase(t, 'https://api.jina.ai/v1');
const authHeaders = (t: ProviderTarget) => ({ authorization: `Bearer ${requireKey(t, 'Jina AI')}` });

type JinaResponse = {
  results?: Array<{ index: number; relevance_score: number; document?: unknown }>;
  usage?: { total_tokens?: number };
};

export const jina: ProviderAdapter = {
  slug: 'jina',
  name: 'Jina AI',
  baseUrl,
  authHeaders,
  rerank: {
    request: (body, target) =>
      jsonPost(
        `${baseUrl(target)}/rerank`,
        compact({
          model: body.model,
          query: body.query,
          documents: body.documents.map(docText),
          top_n: body.top_n,
          // Jina returns documents by default; the unified default is not to.
          return_documents: body.return_documents ?? false,
        }),
        authHeaders(target),
        target,
      ),
    response(upstream, body, ctx) {
      const r = upstream as JinaResponse;
      const items = (r.results ?? []).map((x) => ({ index: x.index, score: x.relevance_score, document: x.document }));
      return rerankResult('jina', items, body, ctx, { searchUnits: r.usage?.total_tokens });
    },
  },
};
