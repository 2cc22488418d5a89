/** Nebius Token Factory (formerly Nebius AI Studio): OpenAI-compatible chat and embeddings, bearer key. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://docs.tokenfactory.nebius.com/api-reference/introduction (base_url https://api.tokenfactory.nebius.com/v1/)
export const nebius = createOpenAICompatible({
  slug: 'nebius',
  name: 'Nebius Token Factory',
  defaultBaseUrl: 'https://api.tokenfactory.nebius.com/v1',
  embeddingsPath: '/embeddings',
});
