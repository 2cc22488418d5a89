import { defineCheck } from './types';
import { inRange, rangeSchema } from './util';

/** `default.characterCount`: the number of characters (Unicode code points) is within bounds. */
export const characterCount = defineCheck({
  id: 'default.characterCount',
  parameters: rangeSchema('minCharacters', 'maxCharacters'),
  run(input, params) {
    let n = 0;
    for (const _ of input.text) n++;
    return inRange('characters', n, params.minCharacters, params.maxCharacters);
  },
});
