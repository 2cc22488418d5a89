/** Cerebras Inference: OpenAI-compatible chat under `/v1`, bearer key. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://inference-docs.cerebras.ai
export const cerebras = createOpenAICompatible({
  slug: 'cerebras',
  name: 'Cerebras',
  defaultBaseUrl: 'https://api.cerebras.ai/v1',
  params: [
    {
      // "Currently unsupported OpenAI features: these fields will result in a 400 error:
      // frequency_penalty, logit_bias, presence_penalty, parallel_tool_calls, service_tier."
      source: 'https://inference-docs.cerebras.ai/resources/openai#currently-unsupported-openai-features',
      refuse: ['logit_bias'],
      drop: ['frequency_penalty', 'presence_penalty', 'parallel_tool_calls', 'service_tier'],
    },
  ],
});
