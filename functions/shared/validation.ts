import * as zod from 'zod/mini';
import { en } from 'zod/locales';
import { badRequest, type GatewayError } from './errors';

zod.config(en());

/**
 * The zod/mini API the functions use, as `z`. It is an object of named members, not the
 * namespace: re-exporting `import * as z` (`export { z }`) makes esbuild materialise the
 * whole zod/mini namespace, every locale and the JSON-Schema code included, in each
 * bundle that imports it (a third of the gateway bundle when it was measured; bench/README.md).
 * Named members keep tree-shaking. A builder missing here is a type error where it is
 * first used: add it to the list (and its type to the namespace below if needed).
 */
export const z = {
  _default: zod._default,
  any: zod.any,
  array: zod.array,
  boolean: zod.boolean,
  check: zod.check,
  config: zod.config,
  discriminatedUnion: zod.discriminatedUnion,
  email: zod.email,
  enum: zod.enum,
  gt: zod.gt,
  gte: zod.gte,
  int: zod.int,
  intersection: zod.intersection,
  literal: zod.literal,
  looseObject: zod.looseObject,
  lt: zod.lt,
  lte: zod.lte,
  maxLength: zod.maxLength,
  maxSize: zod.maxSize,
  minLength: zod.minLength,
  minSize: zod.minSize,
  negative: zod.negative,
  NEVER: zod.NEVER,
  nonnegative: zod.nonnegative,
  null: zod.null,
  nullable: zod.nullable,
  number: zod.number,
  object: zod.object,
  optional: zod.optional,
  pipe: zod.pipe,
  positive: zod.positive,
  record: zod.record,
  refine: zod.refine,
  regex: zod.regex,
  strictObject: zod.strictObject,
  string: zod.string,
  superRefine: zod.superRefine,
  transform: zod.transform,
  tuple: zod.tuple,
  union: zod.union,
  unknown: zod.unknown,
  url: zod.url,
  uuid: zod.uuid,
};

/** The zod/mini types used as `z.…` in type positions. */
export declare namespace z {
  type infer<T> = zod.infer<T>;
  type input<T> = zod.input<T>;
  type output<T> = zod.output<T>;
  type ZodMiniType<Output = unknown, Input = unknown> = zod.ZodMiniType<Output, Input>;
  type ZodMiniOptional<T extends zod.ZodMiniType = zod.ZodMiniType> = zod.ZodMiniOptional<T>;
  type ZodMiniNullable<T extends zod.ZodMiniType = zod.ZodMiniType> = zod.ZodMiniNullable<T>;
}

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
