/** Alibaba Cloud Model Studio (DashScope) in OpenAI-compatible mode; Beijing region: dashscope.aliyuncs.com as a custom host. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://www.alibabacloud.com/help/en/model-studio/embedding-interfaces-compatible-with-openai
export const dashscope = createOpenAICompatible({
  slug: 'dashscope',
  name: 'Alibaba DashScope (Qwen)',
  defaultBaseUrl: 'https://dashscope-intl.aliyuncs.com/compatible-mode/v1',
  embeddingsPath: '/embeddings',
});
