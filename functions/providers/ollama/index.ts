/**
 * Ollama through its OpenAI layer (`/v1`), passed through. No key is needed; one given
 * is sent (the layer ignores it).
 */
import { badRequest } from '../../shared/errors';
import { createOpenAICompatible } from '../_shared/openai-compatible';

const DEFAULT_BASE = 'http://localhost:11434/v1';

export const ollama = createOpenAICompatible({
  slug: 'ollama',
  name: 'Ollama',
  defaultBaseUrl: DEFAULT_BASE,
  embeddingsPath: '/embeddings',
  requiresKey: false,
  baseUrl(target) {
    if (!target.customHost) return DEFAULT_BASE;
    const host = target.customHost.replace(/\/+$/, '');
    // A bare host (`http://box:11434`, the usual way to name an Ollama server) cannot
    // serve the OpenAI layer at its root, so `/v1` is added; any path is kept as given.
    let path: string;
    try {
      path = new URL(host).pathname;
    } catch {
      throw badRequest(`Invalid custom host for Ollama: ${host}`, 'x-gateway-custom-host', 'invalid_custom_host');
    }
    return path === '/' ? `${host}/v1` : host;
  },
});
