/** vLLM (self-hosted): its OpenAI-compatible server; a key is sent only when the server was started with `--api-key`. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html
export const vllm = createOpenAICompatible({
  slug: 'vllm',
  name: 'vLLM',
  defaultBaseUrl: 'http://localhost:8000/v1',
  embeddingsPath: '/embeddings',
  requiresKey: false,
  customHostRequired: 'http://my-vllm:8000/v1',
});
