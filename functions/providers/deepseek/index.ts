/**
 * DeepSeek: OpenAI-compatible and passed through. `reasoning_content` and the cache usage
 * fields are extra fields OpenAI clients ignore; `: keep-alive` comments are valid SSE.
 */
import { createOpenAICompatible } from '../_shared/openai-compatible';

export const deepseek = createOpenAICompatible({
  slug: 'deepseek',
  name: 'DeepSeek',
  defaultBaseUrl: 'https://api.deepseek.com',
  params: [
    {
      // deepseek-reasoner: "Not supported parameters: temperature, top_p, presence_penalty,
      // frequency_penalty, logprobs, top_logprobs. … Setting logprobs, top_logprobs will
      // trigger an error." (The others are accepted and have no effect.)
      source: 'https://api-docs.deepseek.com/guides/reasoning_model',
      models: /^deepseek-reasoner/,
      refuse: ['logprobs', 'top_logprobs'],
    },
  ],
});
