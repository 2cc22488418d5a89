import * as z from 'zod/mini';
import { en } from 'zod/locales';
import { badRequest, GatewayError } from './errors';

z.config(en());

type Issue = { path: PropertyKey[]; message: string; code?: string; keys?: string[] };

/** `messages[0].content` style path for an issue. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out;
}

function describe(issue: Issue, root: string): { field: string; text: string } {
  const path = formatPath(issue.path);
  const field = [root, path].filter(Boolean).join(root && path && !path.startsWith('[') ? '.' : '');
  if (issue.code === 'unrecognized_keys' && issue.keys?.length) {
    const where = field ? ` in \`${field}\`` : '';
    return { field: field || issue.keys[0]!, text: `Unrecognized field(s)${where}: ${issue.keys.join(', ')}` };
  }
  return { field, text: field ? `Invalid \`${field}\`: ${issue.message}` : issue.message };
}

/** Turn validation issues into a 400 that names every failing field and its rule. */
export function validationError(issues: readonly Issue[], root = ''): GatewayError {
  const described = issues.map((i) => describe(i, root));
  const first = described[0];
  return badRequest(described.map((d) => d.text).join('; '), first?.field || null, 'invalid_value');
}

/** Parse or throw a 400 naming the fields; `root` prefixes paths (e.g. `query`). */
export function parseInput<T extends z.ZodMiniType>(schema: T, input: unknown, root = ''): z.infer<T> {
  const result = schema.safeParse(input);
  if (!result.success) throw validationError(result.error.issues as Issue[], root);
  return result.data;
}

/** Query strings arrive as text: coerce an optional integer field or throw a named 400. */
export function queryInt(value: string | undefined, name: string, min: number, max: number, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw badRequest(`Invalid \`${name}\`: expected an integer from ${min} to ${max}, got '${value}'.`, name, 'invalid_value');
  }
  return n;
}

export function queryEnum<T extends string>(value: string | undefined, name: string, allowed: readonly T[], fallback: T): T;
export function queryEnum<T extends string>(value: string | undefined, name: string, allowed: readonly T[]): T | undefined;
export function queryEnum<T extends string>(value: string | undefined, name: string, allowed: readonly T[], fallback?: T): T | undefined {
  if (value === undefined || value === '') return fallback;
  if (!(allowed as readonly string[]).includes(value)) {
    throw badRequest(`Invalid \`${name}\`: expected one of ${allowed.join(', ')}, got '${value}'.`, name, 'invalid_value');
  }
  return value as T;
}

export { z };
