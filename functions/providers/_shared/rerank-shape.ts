/**
 * Shared pieces of the unified rerank response: results sorted by score,
 * `document` only when the caller asked for it (taken from the request when the
 * provider does not echo it), and one `search_units` fallback.
 */
import type { RerankRequest, RerankResult, TranslateContext } from '../types';

export const docText = (doc: RerankRequest['documents'][number]): string => (typeof doc === 'string' ? doc : doc.text);

/** Providers that bill no search units: one unit per 100 documents, as Cohere bills. */
export const defaultSearchUnits = (body: RerankRequest) => Math.max(1, Math.ceil(body.documents.length / 100));

type Scored = { index: number; score: number; document?: unknown };

function documentOf(item: Scored, body: RerankRequest): { text: string } | undefined {
  const d = item.document;
  if (typeof d === 'string') return { text: d };
  if (d && typeof d === 'object' && typeof (d as { text?: unknown }).text === 'string') return { text: (d as { text: string }).text };
  const original = body.documents[item.index];
  return original === undefined ? undefined : { text: docText(original) };
}

export function rerankResult(
  provider: string,
  items: Scored[],
  body: RerankRequest,
  ctx: TranslateContext,
  extra: { id?: string; searchUnits?: number },
): RerankResult {
  const results = [...items]
    .sort((a, b) => b.score - a.score)
    .map((item) => {
      const out: RerankResult['results'][number] = { index: item.index, relevance_score: item.score };
      if (body.return_documents) {
        const document = documentOf(item, body);
        if (document) out.document = document;
      }
      return out;
    });
  return {
    object: 'list',
    id: extra.id || ctx.id,
    results,
    model: body.model,
    usage: { search_units: extra.searchUnits ?? defaultSearchUnits(body) },
    provider,
  };
}
