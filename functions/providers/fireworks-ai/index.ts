/** Fireworks AI inference API: OpenAI-compatible, passed through. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

export const fireworksAi = createOpenAICompatible({
  slug: 'fireworks-ai',
  name: 'Fireworks AI',
  defaultBaseUrl: 'https://api.fireworks.ai/inference/v1',
  embeddingsPath: '/embeddings',
});
