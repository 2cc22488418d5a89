/** Zhipu AI (BigModel, GLM): OpenAI-compatible chat and embeddings under `/api/paas/v4`, bearer key. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://docs.bigmodel.cn
export const zhipu = createOpenAICompatible({
  slug: 'zhipu',
  name: 'Zhipu AI (GLM)',
  defaultBaseUrl: 'https://open.bigmodel.cn/api/paas/v4',
  embeddingsPath: '/embeddings',
});
