/** llama.cpp `llama-server` (self-hosted): OpenAI-compatible chat and embeddings; a key only when started with `--api-key`. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md
export const llamaCpp = createOpenAICompatible({
  slug: 'llama-cpp',
  name: 'llama.cpp server',
  defaultBaseUrl: 'http://localhost:8080/v1',
  embeddingsPath: '/embeddings',
  requiresKey: false,
  customHostRequired: 'http://my-llama:8080/v1',
});
