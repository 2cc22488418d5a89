/** Cloudflare Workers AI: OpenAI-compatible chat and embeddings under a per-account path, so the account is named by the custom host. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://developers.cloudflare.com/workers-ai/configuration/open-ai-compatibility/
export const cloudflareWorkersAi = createOpenAICompatible({
  slug: 'cloudflare-workers-ai',
  name: 'Cloudflare Workers AI',
  defaultBaseUrl: 'https://api.cloudflare.com/client/v4/accounts',
  embeddingsPath: '/embeddings',
  customHostRequired: 'https://api.cloudflare.com/client/v4/accounts/{account_id}/ai/v1',
  models: false,
});
