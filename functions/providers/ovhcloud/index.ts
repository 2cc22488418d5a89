/** OVHcloud AI Endpoints: OpenAI-compatible chat; a key is optional (anonymous use is rate limited). */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://help.ovhcloud.com/csm/en-public-cloud-ai-endpoints-getting-started
export const ovhcloud = createOpenAICompatible({
  slug: 'ovhcloud',
  name: 'OVHcloud AI Endpoints',
  defaultBaseUrl: 'https://oai.endpoints.kepler.ai.cloud.ovh.net/v1',
  requiresKey: false,
});
