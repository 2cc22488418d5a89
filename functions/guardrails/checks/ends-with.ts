import { z } from '../../shared/validation';
import { defineCheck } from './types';

/** `default.endsWith`: the text, ignoring trailing whitespace, ends with `suffix`. */
export const endsWith = defineCheck({
  id: 'default.endsWith',
  parameters: z.strictObject({ suffix: z.string().check(z.minLength(1), z.maxLength(1000)) }),
  run(input, params) {
    const verdict = input.text.trimEnd().endsWith(params.suffix);
    return { verdict, explanation: verdict ? 'The text ends with the suffix.' : 'The text does not end with the suffix.' };
  },
});
