/** Nscale serverless inference: OpenAI-compatible chat under `/v1`, bearer key. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://docs.nscale.com/docs/inference/serverless-models/overview
export const nscale = createOpenAICompatible({
  slug: 'nscale',
  name: 'Nscale',
  defaultBaseUrl: 'https://inference.api.nscale.com/v1',
});
