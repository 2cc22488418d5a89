import { defineCheck } from './types';
import { inRange, rangeSchema } from './util';

export const countWords = (text: string) => text.split(/\s+/u).filter(Boolean).length;

/** `default.wordCount`: the number of whitespace-separated words is within bounds. */
export const wordCount = defineCheck({
  id: 'default.wordCount',
  parameters: rangeSchema('minWords', 'maxWords'),
  run(input, params) {
    return inRange('words', countWords(input.text), params.minWords, params.maxWords);
  },
});
