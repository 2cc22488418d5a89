/**
 * Mistral: OpenAI-compatible with renamed fields. Request: `seed` ->
 * `random_seed`, `max_completion_tokens` -> `max_tokens` and `stream_options` dropped (the
 * declared `params`: Mistral refuses any field it does not know with a 422
 * `extra_forbidden`; it always sends usage in its last chunk, and the stream translator then
 * shows it only to callers who asked), `tool_choice: "required"` -> `"any"`, tool-call ids
 * rewritten to the 9 alphanumerics Mistral insists on. Response: `model_length` -> `length`.
 */
import { createHash } from 'node:crypto';
import { createOpenAICompatible } from '../_shared/openai-compatible';
import type { ChatMessage, ChatRequest } from '../types';

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/**
 * A Mistral-valid id for any tool-call id. Derived from a hash, not a counter: callers
 * resend the whole conversation every turn with their original ids, and each request
 * must rewrite an assistant's call id and the matching tool message's id the same way.
 */
export function mistralToolCallId(id: string): string {
  if (/^[a-zA-Z0-9]{9}$/.test(id)) return id;
  const digest = createHash('sha256').update(id).digest();
  let out = '';
  for (let i = 0; i < 9; i++) out += ALNUM[digest[i]! % ALNUM.length];
  return out;
}

function mapMessage(m: ChatMessage): ChatMessage {
  if (m.role === 'tool') return { ...m, tool_call_id: mistralToolCallId(m.tool_call_id) };
  if (m.role === 'assistant' && m.tool_calls) {
    return { ...m, tool_calls: m.tool_calls.map((c) => ({ ...c, id: mistralToolCallId(c.id) })) };
  }
  return m;
}

export function mistralRequest(body: ChatRequest): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body, messages: body.messages.map(mapMessage) };
  if (body.tool_choice === 'required') out.tool_choice = 'any';
  return out;
}

export const mistralAi = createOpenAICompatible({
  slug: 'mistral-ai',
  name: 'Mistral AI',
  defaultBaseUrl: 'https://api.mistral.ai/v1',
  embeddingsPath: '/embeddings',
  params: [
    {
      // The chat request schema names `random_seed` and `max_tokens` and has no `stream_options`.
      source: 'https://docs.mistral.ai/api/#tag/chat/operation/chat_completion_v1_chat_completions_post',
      rename: { seed: 'random_seed', max_completion_tokens: 'max_tokens' },
      drop: ['stream_options'],
    },
  ],
  mapRequest: mistralRequest,
  finishReasons: { model_length: 'length' },
});
