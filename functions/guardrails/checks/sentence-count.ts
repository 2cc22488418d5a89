import { defineCheck } from './types';
import { inRange, rangeSchema } from './util';

/**
 * Sentences: runs of text ended by `.`, `!`, `?` (or `…`) followed by whitespace or the end,
 * plus a trailing run without end punctuation. `3.14` and `e.g.x` do not split.
 */
export function countSentences(text: string): number {
  return text.split(/(?<=[.!?\u2026])["'\u201d\u2019)\]]*(?:\s+|$)/u).filter((s) => /[\p{L}\p{N}]/u.test(s)).length;
}

/** `default.sentenceCount`: the number of sentences is within bounds. */
export const sentenceCount = defineCheck({
  id: 'default.sentenceCount',
  parameters: rangeSchema('minSentences', 'maxSentences'),
  run(input, params) {
    return inRange('sentences', countSentences(input.text), params.minSentences, params.maxSentences);
  },
});
