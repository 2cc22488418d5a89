import { z } from '../../shared/validation';
import { defineCheck } from './types';
import { matchList, operatorSchema, stringList } from './util';

/** `default.contains`: the text contains any / all / none of `words` (case-sensitive substrings). */
export const contains = defineCheck({
  id: 'default.contains',
  parameters: z.strictObject({ words: stringList(), operator: operatorSchema }),
  run(input, params) {
    return matchList(params.operator, params.words, (w) => input.text.includes(w), 'words');
  },
});
