/** Perplexity (Sonar): chat completions at the API root, bearer key; no model list endpoint. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://docs.perplexity.ai/api-reference/chat-completions
export const perplexity = createOpenAICompatible({
  slug: 'perplexity',
  name: 'Perplexity',
  defaultBaseUrl: 'https://api.perplexity.ai',
  models: false,
});
