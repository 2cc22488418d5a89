/** DeepInfra: OpenAI-compatible chat and embeddings under `/v1/openai`, bearer key. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://deepinfra.com/docs/advanced/openai_api
export const deepinfra = createOpenAICompatible({
  slug: 'deepinfra',
  name: 'DeepInfra',
  defaultBaseUrl: 'https://api.deepinfra.com/v1/openai',
  embeddingsPath: '/embeddings',
});
