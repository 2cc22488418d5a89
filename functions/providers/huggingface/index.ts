/** Hugging Face router (Inference Providers): OpenAI-compatible chat, bearer HF token; `model:provider` picks a provider. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://huggingface.co/docs/inference-providers/index
export const huggingface = createOpenAICompatible({
  slug: 'huggingface',
  name: 'Hugging Face Inference Providers',
  defaultBaseUrl: 'https://router.huggingface.co/v1',
});
