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

const OPERATORS = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$regex']);

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
