/**
 * The last step of every rerank answer, whatever the adapter did: docs/api.md exactly.
 * - results: only entries whose `index` points into the request's documents and whose
 *   score is a number; sorted by relevance_score descending (ties by index); at most
 *   `top_n` (a provider that ignores the limit is cut here);
 * - `document: {text}` only when `return_documents` is true, taken from the provider when
 *   it echoed the text, else from the request's document at `index`;
 * - `id`: the provider's, else the gateway's; `usage.search_units`: a non-negative integer,
 *   ceil(documents / 100) per query when the provider reported none;
 * - `model`: the model the request named; `provider`: the adapter that answered.
 */
import { defaultSearchUnits, docText } from '../providers/_shared/rerank-shape';
import type { RerankRequest, RerankResult } from '../providers/types';

type Item = RerankResult['results'][number];

function validItem(item: unknown, documents: number): item is Item {
  const r = item as Partial<Item> | null;
  return (
    !!r && Number.isInteger(r.index) && r.index! >= 0 && r.index! < documents && typeof r.relevance_score === 'number' && Number.isFinite(r.relevance_score)
  );
}

function searchUnits(reported: unknown, body: RerankRequest): number {
  return typeof reported === 'number' && Number.isFinite(reported) && reported >= 0 ? Math.ceil(reported) : defaultSearchUnits(body);
}

export function finaliseRerank(raw: RerankResult, body: RerankRequest, answered: { provider: string; id: string }): RerankResult {
  const ranked = (Array.isArray(raw.results) ? raw.results : [])
    .filter((r) => validItem(r, body.documents.length))
    .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index)
    .slice(0, body.top_n ?? body.documents.length);
  const results = ranked.map((r): Item => {
    const out: Item = { index: r.index, relevance_score: r.relevance_score };
    if (body.return_documents === true) {
      out.document = { text: typeof r.document?.text === 'string' ? r.document.text : docText(body.documents[r.index]!) };
    }
    return out;
  });
  return {
    object: 'list',
    results,
    model: body.model,
    id: typeof raw.id === 'string' && raw.id ? raw.id : answered.id,
    usage: { search_units: searchUnits(raw.usage?.search_units, body) },
    provider: answered.provider,
  };
}
