/** Cerebras Inference: OpenAI-compatible chat under `/v1`, bearer key. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://inference-docs.cerebras.ai
export const cerebras = createOpenAICompatible({
  slug: 'cerebras',
  name: 'Cerebras',
  defaultBaseUrl: 'https://api.cerebras.ai/v1',
});
