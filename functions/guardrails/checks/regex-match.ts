import { z } from '../../shared/validation';
import { defineCheck } from './types';
import { BoundedMap } from './util';

/**
 * `default.regexMatch`: passes when the text matches `rule` (or, with `not`, when it does
 * not). `rule` is a JavaScript pattern, either bare (`\d{4}`) or `/pattern/flags`.
 * Compiled patterns are cached. Patterns are written by workspace admins; the length cap
 * limits, but cannot rule out, a pattern with catastrophic backtracking.
 */
const MAX_RULE_LENGTH = 2000;
const compiled = new BoundedMap<string, RegExp>(500);

export function compileRule(rule: string): RegExp {
  let re = compiled.get(rule);
  if (!re) {
    const literal = /^\/(.+)\/([dgimsuvy]*)$/s.exec(rule);
    // `g` and `y` make `test` stateful; they mean nothing for a yes/no match.
    re = literal ? new RegExp(literal[1]!, literal[2]!.replace(/[gy]/g, '')) : new RegExp(rule);
    compiled.set(rule, re);
  }
  return re;
}

function validRule(rule: string): boolean {
  try {
    compileRule(rule);
    return true;
  } catch {
    return false;
  }
}

export const regexMatch = defineCheck({
  id: 'default.regexMatch',
  parameters: z.strictObject({
    rule: z.string().check(
      z.minLength(1),
      z.maxLength(MAX_RULE_LENGTH),
      z.refine(validRule, 'expected a valid regular expression'),
    ),
    not: z._default(z.boolean(), false),
  }),
  run(input, params) {
    const match = compileRule(params.rule).exec(input.text);
    const verdict = params.not ? match === null : match !== null;
    const explanation = match
      ? `The text matches the pattern${params.not ? ', which it must not' : ''}.`
      : `The text does not match the pattern${params.not ? '' : ', which it must'}.`;
    return { verdict, explanation, data: { matched: match !== null } };
  },
});
