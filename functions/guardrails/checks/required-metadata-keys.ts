import { z } from '../../shared/validation';
import { defineCheck } from './types';
import { stringList } from './util';

/** `default.requiredMetadataKeys`: every key of `metadataKeys` is in the request metadata (`x-gateway-metadata`). */
export const requiredMetadataKeys = defineCheck({
  id: 'default.requiredMetadataKeys',
  parameters: z.strictObject({ metadataKeys: stringList(100) }),
  run(input, params) {
    const missing = params.metadataKeys.filter((k) => !Object.hasOwn(input.request.metadata, k));
    return {
      verdict: missing.length === 0,
      explanation: missing.length === 0 ? 'All required metadata keys are present.' : `Missing metadata keys: ${missing.join(', ')}.`,
      data: { missing },
    };
  },
});
