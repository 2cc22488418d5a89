/** Scaleway Generative APIs: OpenAI-compatible chat and embeddings under `/v1`, the IAM secret key as bearer. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://www.scaleway.com/en/docs/generative-apis/api-cli/using-chat-api/
export const scaleway = createOpenAICompatible({
  slug: 'scaleway',
  name: 'Scaleway Generative APIs',
  defaultBaseUrl: 'https://api.scaleway.ai/v1',
  embeddingsPath: '/embeddings',
});
