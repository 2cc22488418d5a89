/** Moonshot AI (Kimi): OpenAI-compatible chat under `/v1`, bearer key (mainland host: api.moonshot.cn, as a custom host). */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://platform.kimi.com/docs/api/overview
export const moonshot = createOpenAICompatible({
  slug: 'moonshot',
  name: 'Moonshot AI (Kimi)',
  defaultBaseUrl: 'https://api.moonshot.ai/v1',
});
