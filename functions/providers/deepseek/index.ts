/**
 * DeepSeek: OpenAI-compatible and passed through. `reasoning_content` and the cache usage
 * fields are extra fields OpenAI clients ignore; `: keep-alive` comments are valid SSE.
 */
import { createOpenAICompatible } from '../_shared/openai-compatible';

export const deepseek = createOpenAICompatible({
  slug: 'deepseek',
  name: 'DeepSeek',
  defaultBaseUrl: 'https://api.deepseek.com',
});
