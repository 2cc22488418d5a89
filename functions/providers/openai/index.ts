/** OpenAI itself: everything is already in the gateway's wire format, so it passes through. */
import { createOpenAICompatible } from '../_shared/openai-compatible';

export const openai = createOpenAICompatible({
  slug: 'openai',
  name: 'OpenAI',
  defaultBaseUrl: 'https://api.openai.com/v1',
  embeddingsPath: '/embeddings',
  // https://platform.openai.com/docs/api-reference/chat/create#chat-create-stream_options
  streamUsageOnRequest: true,
  audio: { speech: true, transcriptions: true, translations: true },
  textPartsOnEveryRole: true,
});
