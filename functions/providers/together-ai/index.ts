/** Together AI: OpenAI-compatible except the finish reason `eos`, which means `stop`. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

export const togetherAi = createOpenAICompatible({
  slug: 'together-ai',
  name: 'Together AI',
  defaultBaseUrl: 'https://api.together.xyz/v1',
  embeddingsPath: '/embeddings',
  finishReasons: { eos: 'stop' },
});
