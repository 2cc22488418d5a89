/** Nebius (AI Studio, now Token Factory): OpenAI-compatible chat and embeddings, bearer key. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://docs.nebius.com/studio/inference/quickstart
export const nebius = createOpenAICompatible({
  slug: 'nebius',
  name: 'Nebius AI Studio',
  defaultBaseUrl: 'https://api.tokenfactory.nebius.com/v1',
  embeddingsPath: '/embeddings',
});
