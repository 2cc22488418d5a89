import { z } from '../../shared/validation';
import { jsonOf } from './json-text';
import { defineCheck } from './types';
import { matchList, operatorSchema, stringList } from './util';

/** `default.jsonKeys`: the top-level JSON object of the text has any / all / none of `keys`. */
export const jsonKeys = defineCheck({
  id: 'default.jsonKeys',
  parameters: z.strictObject({ keys: stringList(), operator: operatorSchema }),
  run(input, params) {
    const value = jsonOf(input);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return { verdict: false, explanation: 'The text contains no JSON object.' };
    }
    return matchList(params.operator, params.keys, (k) => Object.hasOwn(value, k), 'keys');
  },
});
