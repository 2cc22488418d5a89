/** Featherless AI: OpenAI-compatible chat under `/v1`, bearer key. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://featherless.ai/docs/api-overview-and-common-options
export const featherless = createOpenAICompatible({
  slug: 'featherless',
  name: 'Featherless AI',
  defaultBaseUrl: 'https://api.featherless.ai/v1',
});
