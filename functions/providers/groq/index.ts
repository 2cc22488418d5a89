/**
 * Groq: OpenAI-compatible. Its streams have carried usage under `x_groq.usage` in the
 * last chunk, so the stream is translated to put usage where OpenAI clients look for it.
 */
import { createOpenAICompatible } from '../_shared/openai-compatible';
import type { Usage } from '../types';

export const groq = createOpenAICompatible({
  slug: 'groq',
  name: 'Groq',
  defaultBaseUrl: 'https://api.groq.com/openai/v1',
  audio: { speech: true, transcriptions: true, translations: true },
  params: [
    {
      // "The following fields are currently not supported and will result in a 400 error if
      // they are supplied: logprobs, logit_bias, top_logprobs, messages[].name; if N is
      // supplied, it must be equal to 1."
      source: 'https://console.groq.com/docs/openai#currently-unsupported-openai-features',
      refuse: ['logprobs', 'top_logprobs', 'logit_bias', 'n'],
      drop: ['messages[].name'],
    },
  ],
  streamUsage(chunk) {
    const extra = chunk.x_groq as { usage?: Usage } | undefined;
    const usage = extra?.usage;
    if (extra) delete extra.usage;
    return usage;
  },
});
