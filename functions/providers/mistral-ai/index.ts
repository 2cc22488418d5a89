/**
 * Mistral: OpenAI-compatible with renamed fields. Request: `seed` ->
 * `random_seed`, `tool_choice: "required"` -> `"any"`, `max_completion_tokens` ->
 * `max_tokens`, tool-call ids rewritten to the 9 alphanumerics Mistral insists on, and
 * `stream_options` dropped (Mistral always sends usage in its last chunk; the stream
 * translator then shows it only to callers who asked). Response: `model_length` -> `length`.
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
  const { seed, max_completion_tokens, stream_options: _dropped, ...rest } = body;
  const out: Record<string, unknown> = { ...rest, messages: body.messages.map(mapMessage) };
  if (seed !== undefined) out.random_seed = seed;
  if (max_completion_tokens !== undefined && out.max_tokens === undefined) out.max_tokens = max_completion_tokens;
  if (body.tool_choice === 'required') out.tool_choice = 'any';
  return out;
}

export const mistralAi = createOpenAICompatible({
  slug: 'mistral-ai',
  name: 'Mistral AI',
  defaultBaseUrl: 'https://api.mistral.ai/v1',
  embeddingsPath: '/embeddings',
  mapRequest: mistralRequest,
  finishReasons: { model_length: 'length' },
});
