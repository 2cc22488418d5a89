/**
 * `cache_control`: Anthropic's prompt-cache mark, which the chat request carries as an
 * extension (top level, on content parts and on tools; from a translated Messages request
 * or an OpenAI-shaped caller, as Portkey accepts it). The Anthropic adapter places it as
 * Anthropic takes it, Bedrock as `cachePoint` blocks; every other provider gets the request
 * without it (OpenAI refuses unknown fields), dropped here.
 */
import type { ChatMessage, ChatRequest } from '../types';

const marked = (value: unknown): boolean => (value as { cache_control?: unknown } | null)?.cache_control !== undefined;

function unmarked<T extends object>(value: T): T {
  const { cache_control: _, ...rest } = value as T & { cache_control?: unknown };
  return rest as T;
}

const messageMarked = (m: ChatMessage): boolean => Array.isArray(m.content) && m.content.some(marked);

/** The request without any `cache_control` mark; the same object when it has none (the usual case). */
export function withoutCacheMarks<T extends ChatRequest>(body: T): T {
  const inMessages = body.messages.some(messageMarked);
  const inTools = body.tools?.some(marked) ?? false;
  if (!inMessages && !inTools && body.cache_control === undefined) return body;
  const out = unmarked(body);
  if (inMessages) {
    out.messages = body.messages.map((m) =>
      messageMarked(m) ? ({ ...m, content: (m.content as object[]).map((p) => (marked(p) ? unmarked(p) : p)) } as ChatMessage) : m,
    );
  }
  if (inTools) out.tools = body.tools!.map((t) => (marked(t) ? unmarked(t) : t));
  return out;
}
