/** NVIDIA NIM (API catalog): OpenAI-compatible chat and embeddings, bearer key; a self-hosted NIM is a custom host. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://docs.api.nvidia.com/nim/reference
export const nvidiaNim = createOpenAICompatible({
  slug: 'nvidia-nim',
  name: 'NVIDIA NIM',
  defaultBaseUrl: 'https://integrate.api.nvidia.com/v1',
  embeddingsPath: '/embeddings',
});
