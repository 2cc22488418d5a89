/** Hugging Face Text Generation Inference (self-hosted): the Messages API (OpenAI chat completions); a key is sent when given (Inference Endpoints need one). */
import { createOpenAICompatible } from '../_shared/openai-compatible';

// Source: https://huggingface.co/docs/text-generation-inference/messages_api
export const tgi = createOpenAICompatible({
  slug: 'tgi',
  name: 'Hugging Face TGI',
  defaultBaseUrl: 'http://localhost:3000/v1',
  models: false,
  requiresKey: false,
  customHostRequired: 'http://my-tgi:3000/v1',
});
