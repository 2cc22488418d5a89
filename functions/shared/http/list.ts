import type { PageRequest } from '../db/list';
import { badRequest } from '../errors';
import { queryEnum, queryInt } from '../validation';

/** Cursors are object ids; a longer one cannot match and would exceed DynamoDB's key size. */
const MAX_CURSOR_BYTES = 512;

function cursor(value: string | undefined, name: string): string | undefined {
  if (!value) return undefined;
  if (Buffer.byteLength(value, 'utf8') > MAX_CURSOR_BYTES) {
    throw badRequest(`Invalid \`${name}\`: expected an object id of at most ${MAX_CURSOR_BYTES} bytes.`, name, 'invalid_value');
  }
  return value;
}

/** `limit`, `order`, `after`, `before` from the query string (OpenAI list conventions). */
export function pageFromQuery(query: Record<string, string>, defaults: { limit?: number; maxLimit?: number; order?: 'asc' | 'desc' } = {}): PageRequest {
  return {
    limit: queryInt(query.limit, 'limit', 1, defaults.maxLimit ?? 100, defaults.limit ?? 20),
    order: queryEnum(query.order, 'order', ['asc', 'desc'] as const, defaults.order ?? 'desc'),
    after: cursor(query.after, 'after'),
    before: cursor(query.before, 'before'),
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
