/** Upstage (Solar): OpenAI-compatible chat and embeddings under `/v1`, bearer key. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://console.upstage.ai/docs/capabilities/chat
export const upstage = createOpenAICompatible({
  slug: 'upstage',
  name: 'Upstage',
  defaultBaseUrl: 'https://api.upstage.ai/v1',
  embeddingsPath: '/embeddings',
});
