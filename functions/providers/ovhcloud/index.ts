/** OVHcloud AI Endpoints: OpenAI-compatible chat and embeddings; a key is optional (anonymous use is rate limited). */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Sources: https://help.ovhcloud.com/csm/en-public-cloud-ai-endpoints-getting-started (base URL);
// https://www.ovhcloud.com/en/public-cloud/ai-endpoints/catalog/bge-base-en-v1-5 (POST {base}/embeddings, Bearer token).
export const ovhcloud = createOpenAICompatible({
  slug: 'ovhcloud',
  name: 'OVHcloud AI Endpoints',
  defaultBaseUrl: 'https://oai.endpoints.kepler.ai.cloud.ovh.net/v1',
  embeddingsPath: '/embeddings',
  requiresKey: false,
});
