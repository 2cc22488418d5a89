/** SiliconFlow: OpenAI-compatible chat and embeddings under `/v1`, bearer key (mainland: api.siliconflow.cn). */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://docs.siliconflow.com/en/api-reference/chat-completions/chat-completions
export const siliconflow = createOpenAICompatible({
  slug: 'siliconflow',
  name: 'SiliconFlow',
  defaultBaseUrl: 'https://api.siliconflow.com/v1',
  embeddingsPath: '/embeddings',
});
