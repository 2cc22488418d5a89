/**
 * The vocabulary of the documented-operations table (operations.ts): what an operation is,
 * what it answers, and the builders and query parameters the table repeats.
 */
import type * as zm from 'zod/mini';
import type { Access, HttpMethod } from '../../functions/shared/http/types';

export interface QueryParameter {
  name: string;
  description: string;
  type: 'string' | 'integer' | 'boolean';
  enum?: readonly string[];
}

/** What a successful call answers. */
export type Answer =
  | 'object' // one JSON object
  | 'list' // `{object: "list", data, first_id, last_id, has_more}`
  | 'deleted' // `{id, object, deleted: true}`
  | 'stream' // JSON, or server-sent events with `stream: true`
  | 'passthrough' // the provider's answer, unchanged
  | 'bytes'; // a file's stored bytes

export interface Operation {
  method: HttpMethod;
  /** As in the route table; a final `{proxy+}` matches the rest of the path. */
  path: string;
  access: Access;
  summary: string;
  description?: string;
  /** A named JSON body (a component schema), or a body the gateway passes through unread. */
  body?: { name: string; schema: zm.ZodMiniType } | { passthrough: string } | { form: Record<string, unknown> };
  query?: readonly QueryParameter[];
  answer: Answer;
}

export const page: QueryParameter[] = [
  { name: 'limit', type: 'integer', description: 'Page size, 1-100 (default 20).' },
  { name: 'order', type: 'string', enum: ['asc', 'desc'], description: 'Sort order by creation time.' },
  { name: 'after', type: 'string', description: 'Cursor: an object id; the page starts after it.' },
  { name: 'before', type: 'string', description: 'Cursor: an object id; the page ends before it.' },
];
export const workspaceId: QueryParameter = {
  name: 'workspace_id',
  type: 'string',
  description: "Another workspace of the key's organisation (admin keys); default the key's own.",
};

export const op = (method: HttpMethod, path: string, access: Access, summary: string, answer: Answer, rest: Partial<Operation> = {}): Operation => ({
  method,
  path,
  access,
  summary,
  answer,
  ...rest,
});
export const body = (name: string, schema: zm.ZodMiniType) => ({ body: { name, schema } });
