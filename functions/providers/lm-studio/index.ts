/** LM Studio (self-hosted): its OpenAI-compatible server; a key only when authentication is turned on. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://lmstudio.ai/docs/api/openai-api
export const lmStudio = createOpenAICompatible({
  slug: 'lm-studio',
  name: 'LM Studio',
  defaultBaseUrl: 'http://localhost:1234/v1',
  embeddingsPath: '/embeddings',
  requiresKey: false,
  customHostRequired: 'http://my-desktop:1234/v1',
});
