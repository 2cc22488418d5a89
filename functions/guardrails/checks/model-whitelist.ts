import { z } from '../../shared/validation';
import { defineCheck } from './types';
import { stringList } from './util';

/** `default.modelWhitelist`: the request's model is one of `models` (exact names). */
export const modelWhitelist = defineCheck({
  id: 'default.modelWhitelist',
  parameters: z.strictObject({ models: stringList() }),
  run(input, params) {
    const model = input.request.model;
    if (!model) return { verdict: false, explanation: 'The request names no model.' };
    const verdict = params.models.includes(model);
    return { verdict, explanation: verdict ? `Model '${model}' is allowed.` : `Model '${model}' is not in the allowed list.`, data: { model } };
  },
});
