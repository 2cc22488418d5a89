/**
 * Groq: OpenAI-compatible. Its streams have carried usage under `x_groq.usage` in the
 * last chunk, so the stream is translated to put usage where OpenAI clients look for it.
 */
import { createOpenAICompatible } from './openai-compatible';

export const groq = createOpenAICompatible({
  slug: 'groq',
  name: 'Groq',
  defaultBaseUrl: 'https://api.groq.com/openai/v1',
  audio: { speech: true, transcriptions: true, translations: true },
  translateStream: true,
});
