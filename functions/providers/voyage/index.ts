/**
 * Voyage AI rerank: POST {base}/rerank. `top_n` is sent as `top_k`, results
 * come back under `data` with `document` as a string. Sent: model, query, documents (as
 * text), top_k, return_documents, truncation. Dropped (Voyage has no such field):
 * max_tokens_per_doc, priority, rank_fields, parameters. `usage.total_tokens` is reported
 * as `search_units` (as Portkey does).
 */
import { compact, jsonPost, requireKey, resolveBase } from '../_shared/openai-shape';
import { docText, rerankResult } from '../_shared/rerank-shape';
import type { ProviderAdapter, ProviderTarget } from '../types';

const baseUrl = (t: ProviderTarget) => resolveBase(t, 'https://api.voyageai.com/v1');
const authHeaders = (t: ProviderTarget) => ({ authorization: `Bearer ${requireKey(t, 'Voyage AI')}` });

type VoyageResponse = {
  data?: Array<{ index: number; relevance_score: number; document?: string }>;
  usage?: { total_tokens?: number };
};

export const voyage: ProviderAdapter = {
  slug: 'voyage',
  name: 'Voyage AI',
  baseUrl,
  authHeaders,
  rerank: {
    request: (body, target) =>
      jsonPost(
        `${baseUrl(target)}/rerank`,
        compact({
          query: body.query,
          documents: body.documents.map(docText),
          model: body.model,
          top_k: body.top_n,
          return_documents: body.return_documents,
          truncation: body.truncation,
        }),
        authHeaders(target),
        target,
      ),
    response(upstream, body, ctx) {
      const r = upstream as VoyageResponse;
      const items = (r.data ?? []).map((x) => ({ index: x.index, score: x.relevance_score, document: x.document }));
      return rerankResult('voyage', items, body, ctx, { searchUnits: r.usage?.total_tokens });
    },
  },
};
