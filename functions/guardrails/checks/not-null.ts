import { defineCheck } from './types';
import { noParameters } from './letter-case';

/** `default.notNull`: the text is not empty or whitespace only (a JSON value other than null also passes). */
export const notNull = defineCheck({
  id: 'default.notNull',
  parameters: noParameters,
  run(input) {
    const verdict = input.text.trim() !== '' || (input.json !== undefined && input.json !== null);
    return { verdict, explanation: verdict ? 'The content is not empty.' : 'The content is empty.' };
  },
});
