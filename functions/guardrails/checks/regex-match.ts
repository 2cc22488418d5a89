import { compileLinearRegex, linearRegexProblem } from '../../shared/linear-regex';
import { z } from '../../shared/validation';
import { defineCheck } from './types';

/**
 * `default.regexMatch`: passes when the text matches `rule` (or, with `not`, when it does
 * not). `rule` is a pattern, bare (`\d{4}`) or `/pattern/flags`, run with RE2 semantics in
 * linear time (functions/shared/linear-regex.ts): no pattern can stall the container, and
 * patterns RE2 cannot express (backreferences, lookaround) are refused when the guardrail
 * is saved or sent inline.
 */
const MAX_RULE_LENGTH = 2000;

export const regexMatch = defineCheck({
  id: 'default.regexMatch',
  parameters: z.strictObject({
    rule: z.string().check(
      z.minLength(1),
      z.maxLength(MAX_RULE_LENGTH),
      z.superRefine((rule, ctx) => {
        const problem = linearRegexProblem(rule);
        if (problem)
          ctx.addIssue({
            code: 'custom',
            message: `expected a valid regular expression (RE2 syntax: no backreferences or lookaround): ${problem}`,
            input: rule,
          });
      }),
    ),
    not: z._default(z.boolean(), false),
  }),
  run(input, params) {
    const matched = compileLinearRegex(params.rule).test(input.text);
    const verdict = params.not ? !matched : matched;
    const explanation = matched
      ? `The text matches the pattern${params.not ? ', which it must not' : ''}.`
      : `The text does not match the pattern${params.not ? '' : ', which it must'}.`;
    return { verdict, explanation, data: { matched } };
  },
});
