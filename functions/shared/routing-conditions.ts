/**
 * Conditional routing queries (Portkey style): `{"metadata.plan": {"$eq": "paid"}}`,
 * combined with `$and` / `$or`. Paths read `metadata.*`, `params.*` (request body) and
 * `url.pathname`. A path that is missing compares as undefined.
 */
export interface ConditionInput {
  metadata: Record<string, string>;
  params: Record<string, unknown>;
  url: { pathname: string };
}

type Query = Record<string, unknown>;

/**
 * Compiles a `$regex` pattern: functions/shared/linear-regex.ts (RE2 semantics, linear
 * time), which the router loads only for configs that use `$regex`. A pattern it refuses
 * matches nothing; without a compiler `$regex` matches nothing.
 */
export type RegexCompiler = (pattern: string) => { test(text: string): boolean };

/** Whether a query uses `$regex` anywhere. */
export const usesRegex = (query: unknown): boolean => JSON.stringify(query).includes('"$regex"');

const OPERATOR_LIST = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$regex'] as const;
const OPERATORS = new Set<string>(OPERATOR_LIST);
const COMBINATORS = ['$and', '$or'];
const PATH_ROOTS = ['metadata', 'params', 'url'];

export interface QueryProblem {
  path: PropertyKey[];
  message: string;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * What `matches` would silently treat as "no match": unknown operators or combinators,
 * paths outside metadata/params/url, `$in`/`$nin` without a list. Reported at save time
 * (and for inline configs) so a typo is a 400, not a request routed to `default`.
 */
export function queryProblems(query: Record<string, unknown>, at: PropertyKey[], problems: QueryProblem[] = []): QueryProblem[] {
  for (const [key, condition] of Object.entries(query)) {
    const here = [...at, key];
    if (key.startsWith('$')) {
      if (!COMBINATORS.includes(key)) {
        problems.push({ path: here, message: `unknown condition combinator '${key}'; a query combines conditions with ${COMBINATORS.join(', ')}` });
      } else if (!Array.isArray(condition) || !condition.every(isPlainObject)) {
        problems.push({ path: here, message: `'${key}' takes a list of queries` });
      } else {
        condition.forEach((q, i) => queryProblems(q, [...here, i], problems));
      }
      continue;
    }
    if (!PATH_ROOTS.includes(key.split('.')[0]!)) {
      problems.push({ path: here, message: `unknown condition path '${key}'; a path starts with ${PATH_ROOTS.map((r) => `${r}.`).join(', ')}` });
      continue;
    }
    if (Array.isArray(condition)) {
      problems.push({ path: here, message: 'a condition is a value or an object of operators; match a list with $in' });
      continue;
    }
    if (!isPlainObject(condition)) continue; // a bare value: shorthand for $eq
    const ops = Object.entries(condition);
    if (!ops.length) problems.push({ path: here, message: `an empty condition; use one of ${OPERATOR_LIST.join(', ')}` });
    for (const [op, expected] of ops) {
      if (!OPERATORS.has(op)) {
        problems.push({ path: [...here, op], message: `unknown condition operator '${op}'; known operators: ${OPERATOR_LIST.join(', ')}` });
      } else if ((op === '$in' || op === '$nin') && !Array.isArray(expected)) {
        problems.push({ path: [...here, op], message: `'${op}' takes a list of values` });
      } else if (op === '$regex' && typeof expected !== 'string') {
        problems.push({ path: [...here, op], message: `'$regex' takes a pattern string` });
      }
    }
  }
  return problems;
}

function lookup(input: ConditionInput, path: string): unknown {
  let value: unknown = input;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

function compare(actual: unknown, op: string, expected: unknown, regex?: RegexCompiler): boolean {
  switch (op) {
    case '$eq':
      return actual === expected || (actual !== undefined && String(actual) === String(expected));
    case '$ne':
      return !compare(actual, '$eq', expected);
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte': {
      const a = Number(actual);
      const b = Number(expected);
      if (actual === undefined || Number.isNaN(a) || Number.isNaN(b)) return false;
      return op === '$gt' ? a > b : op === '$gte' ? a >= b : op === '$lt' ? a < b : a <= b;
    }
    case '$in':
      return Array.isArray(expected) && expected.some((e) => compare(actual, '$eq', e));
    case '$nin':
      return Array.isArray(expected) && !expected.some((e) => compare(actual, '$eq', e));
    case '$regex':
      try {
        // biome-ignore lint/complexity/useOptionalChain: 0, '' and false are values to match, not absent ones
        return actual !== undefined && regex !== undefined && regex(String(expected)).test(String(actual));
      } catch {
        return false;
      }
    default:
      return false;
  }
}

export function matches(query: Query, input: ConditionInput, regex?: RegexCompiler): boolean {
  return Object.entries(query).every(([key, condition]) => {
    if (key === '$and') return Array.isArray(condition) && condition.every((q) => matches(q as Query, input, regex));
    if (key === '$or') return Array.isArray(condition) && condition.some((q) => matches(q as Query, input, regex));
    const actual = lookup(input, key);
    if (condition !== null && typeof condition === 'object' && !Array.isArray(condition)) {
      const ops = Object.entries(condition as Record<string, unknown>);
      if (ops.length && ops.every(([op]) => OPERATORS.has(op))) return ops.every(([op, exp]) => compare(actual, op, exp, regex));
    }
    return compare(actual, '$eq', condition, regex);
  });
}
