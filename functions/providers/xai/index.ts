/** xAI (Grok): OpenAI-compatible chat completions under `/v1`, bearer key (xAI now documents Chat Completions as legacy, Responses as primary). */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://docs.x.ai/developers/rest-api-reference/inference
export const xai = createOpenAICompatible({
  slug: 'xai',
  name: 'xAI',
  defaultBaseUrl: 'https://api.x.ai/v1',
});
