/** AI21 (Jamba): chat completions under `/studio/v1`, bearer key. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://docs.ai21.com/reference/jamba-1-6-api-ref
export const ai21 = createOpenAICompatible({
  slug: 'ai21',
  name: 'AI21 Labs',
  defaultBaseUrl: 'https://api.ai21.com/studio/v1',
});
