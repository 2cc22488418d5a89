/** Novita AI: OpenAI-compatible chat and embeddings under `/openai/v1`, bearer key. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://novita.ai/docs/guides/llm-api
export const novita = createOpenAICompatible({
  slug: 'novita',
  name: 'Novita AI',
  defaultBaseUrl: 'https://api.novita.ai/openai/v1',
  embeddingsPath: '/embeddings',
});
