import { z } from '../../shared/validation';
import type { CheckResult } from './types';

/** How a list of wanted items is matched: at least one, every one, or none of them. */
export const operatorSchema = z._default(z.enum(['any', 'all', 'none']), 'any');
export type Operator = 'any' | 'all' | 'none';

/** A non-empty list of non-empty strings (words, keys, models, ...). */
export const stringList = (max = 1000) => z.array(z.string().check(z.minLength(1), z.maxLength(1000))).check(z.minLength(1), z.maxLength(max));

export const count = () => z.optional(z.int().check(z.gte(0)));

/**
 * Parameters `{[min]?, [max]?}` of a counting check: non-negative integers, at least one
 * given, min <= max (the error names the max parameter).
 */
export function rangeSchema<Min extends string, Max extends string>(min: Min, max: Max): z.ZodMiniType<Partial<Record<Min | Max, number>>> {
  const shape: Record<string, ReturnType<typeof count>> = { [min]: count(), [max]: count() };
  return z.strictObject(shape).check(
    z.superRefine((value: Record<string, number | undefined>, ctx) => {
      const lo = value[min];
      const hi = value[max];
      if (lo === undefined && hi === undefined) {
        ctx.addIssue({ code: 'custom', message: `set \`${min}\` and/or \`${max}\``, path: [min], input: value });
      } else if (lo !== undefined && hi !== undefined && lo > hi) {
        ctx.addIssue({ code: 'custom', message: `must be at least \`${min}\` (${lo})`, path: [max], input: value });
      }
    }),
  ) as unknown as z.ZodMiniType<Partial<Record<Min | Max, number>>>;
}

/** The verdict of a counted quantity against optional bounds. */
export function inRange(what: string, n: number, min: number | undefined, max: number | undefined): CheckResult {
  const lo = min ?? 0;
  const hi = max ?? Number.POSITIVE_INFINITY;
  const verdict = n >= lo && n <= hi;
  const bounds = max === undefined ? `at least ${lo}` : min === undefined ? `at most ${hi}` : `between ${lo} and ${hi}`;
  return {
    verdict,
    explanation: `${n} ${what}; expected ${bounds}.`,
    data: { count: n, min: min ?? null, max: max ?? null },
  };
}

/** Match `wanted` items against what was `found` with an operator. */
export function matchList(operator: Operator, wanted: readonly string[], has: (item: string) => boolean, noun: string): CheckResult {
  const found = wanted.filter(has);
  const missing = wanted.filter((w) => !found.includes(w));
  const verdict = operator === 'any' ? found.length > 0 : operator === 'all' ? missing.length === 0 : found.length === 0;
  const explanation =
    operator === 'none'
      ? verdict
        ? `None of the ${noun} are present.`
        : `Found ${found.length} forbidden ${noun}: ${found.join(', ')}.`
      : verdict
        ? `Found ${found.length} of ${wanted.length} ${noun}.`
        : operator === 'all'
          ? `Missing ${missing.length} of ${wanted.length} ${noun}: ${missing.join(', ')}.`
          : `None of the ${noun} are present.`;
  return { verdict, explanation, data: { operator, found, missing } };
}

/** Map with a size bound: the oldest entry goes when a new one would exceed it. */
export class BoundedMap<K, V> extends Map<K, V> {
  constructor(
    private readonly limit: number,
    private readonly onEvict?: (key: K, value: V) => void,
  ) {
    super();
  }

  override set(key: K, value: V): this {
    if (!this.has(key) && this.size >= this.limit) {
      const oldest = this.keys().next();
      if (!oldest.done) {
        const old = this.get(oldest.value);
        this.delete(oldest.value);
        if (old !== undefined) this.onEvict?.(oldest.value, old);
      }
    }
    return super.set(key, value);
  }
}
