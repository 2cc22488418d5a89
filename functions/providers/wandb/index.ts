/** W&B Inference (CoreWeave): OpenAI-compatible chat under `/v1`, the W&B API key as bearer. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://docs.wandb.ai/inference/api-reference
export const wandb = createOpenAICompatible({
  slug: 'wandb',
  name: 'W&B Inference',
  defaultBaseUrl: 'https://api.inference.wandb.ai/v1',
});
