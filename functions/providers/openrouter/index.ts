/**
 * OpenRouter: OpenAI-compatible, passed through. Its `: OPENROUTER PROCESSING` comments
 * are valid SSE and its mid-stream `{"error":…}` chunks are already what OpenAI SDKs raise.
 */
import { createOpenAICompatible } from '../_shared/openai-compatible';

export const openrouter = createOpenAICompatible({
  slug: 'openrouter',
  name: 'OpenRouter',
  defaultBaseUrl: 'https://openrouter.ai/api/v1',
});
