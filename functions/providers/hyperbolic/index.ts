/** Hyperbolic: OpenAI-compatible chat under `/v1`, bearer key. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://docs.hyperbolic.xyz/docs/rest-api
export const hyperbolic = createOpenAICompatible({
  slug: 'hyperbolic',
  name: 'Hyperbolic',
  defaultBaseUrl: 'https://api.hyperbolic.xyz/v1',
});
