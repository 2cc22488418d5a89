/** SambaNova Cloud: OpenAI-compatible chat and embeddings under `/v1`, bearer key. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://docs.sambanova.ai/cloud/docs/capabilities/openai-compatibility
export const sambanova = createOpenAICompatible({
  slug: 'sambanova',
  name: 'SambaNova',
  defaultBaseUrl: 'https://api.sambanova.ai/v1',
  embeddingsPath: '/embeddings',
});
