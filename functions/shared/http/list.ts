import type { PageRequest } from '../db/list';
import { queryEnum, queryInt } from '../validation';

/** `limit`, `order`, `after`, `before` from the query string (OpenAI list conventions). */
export function pageFromQuery(
  query: Record<string, string>,
  defaults: { limit?: number; maxLimit?: number; order?: 'asc' | 'desc' } = {},
): PageRequest {
  return {
    limit: queryInt(query.limit, 'limit', 1, defaults.maxLimit ?? 100, defaults.limit ?? 20),
    order: queryEnum(query.order, 'order', ['asc', 'desc'] as const, defaults.order ?? 'desc'),
    after: query.after || undefined,
    before: query.before || undefined,
  };
}

/** `{object: "list", data, first_id, last_id, has_more}`. */
export function listObject<T extends { id: string }>(data: T[], hasMore: boolean) {
  return {
    object: 'list' as const,
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: hasMore,
  };
}
