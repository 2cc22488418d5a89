/** xAI (Grok): OpenAI-compatible chat completions under `/v1`, bearer key (xAI now documents Chat Completions as legacy, Responses as primary). */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://docs.x.ai/developers/rest-api-reference/inference
export const xai = createOpenAICompatible({
  slug: 'xai',
  name: 'xAI',
  defaultBaseUrl: 'https://api.x.ai/v1',
  params: [
    {
      // "presencePenalty, frequencyPenalty and stop are not supported by reasoning models;
      // adding them in the request will result in an error." Reasoning models: grok-3-mini,
      // grok-4 (except its -non-reasoning variants), grok-code.
      source: 'https://docs.x.ai/docs/guides/reasoning',
      models: /^grok-(?:3-mini|code|4(?!.*non-reasoning))/,
      refuse: ['stop'],
      drop: ['presence_penalty', 'frequency_penalty'],
    },
  ],
});
