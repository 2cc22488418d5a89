/**
 * Small builders shared by the adapters: OpenAI-shaped chunks, completions and usage,
 * plus the URL and header rules every adapter follows (custom host, forwarded headers).
 */
import { badRequest } from '../../shared/errors';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  FinishReason,
  ModelEntry,
  ProviderTarget,
  StreamError,
  TranslateContext,
  UpstreamRequest,
  Usage,
} from '../types';

export type ToolCall = { id: string; type: 'function'; function: { name: string; arguments: string } };
export type ChunkDelta = ChatCompletionChunk['choices'][number]['delta'];

/** The default base URL, or the caller's custom host without a trailing slash. */
export function resolveBase(target: ProviderTarget, defaultBase: string): string {
  return (target.customHost || defaultBase).replace(/\/+$/, '');
}

/** The caller's provider key, or a 400 naming what is missing. */
export function requireKey(target: ProviderTarget, providerName: string): string {
  if (!target.apiKey) {
    throw badRequest(
      `Missing API key for ${providerName}: send it as "Authorization: Bearer <key>" or use a managed provider.`,
      'authorization',
      'missing_provider_key',
    );
  }
  return target.apiKey;
}

/** Headers a caller may never forward: the gateway's own ones and hop-by-hop ones. */
const NEVER_FORWARDED = new Set([
  'host',
  'content-length',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authorization',
  'proxy-connection',
]);

const forwardable = (name: string) => !name.startsWith('x-gateway-') && !NEVER_FORWARDED.has(name);

/**
 * Final upstream headers, all lowercase so no name appears twice with different case.
 * Forwarded headers are added but never replace a header the adapter set itself: the
 * adapter's auth, version and content-type headers are what the wire format needs.
 */
export function buildHeaders(own: Record<string, string>, target: ProviderTarget): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(target.forwardHeaders ?? {})) {
    const lower = name.toLowerCase();
    if (forwardable(lower)) out[lower] = value;
  }
  for (const [name, value] of Object.entries(own)) {
    const lower = name.toLowerCase();
    if (!lower.startsWith('x-gateway-')) out[lower] = value;
  }
  return out;
}

/** A JSON POST request with the adapter's auth headers merged with forwarded ones. */
/** A GET with the provider's auth headers (and the caller's forwarded ones). */
export function jsonGet(url: string, auth: Record<string, string>, target: ProviderTarget): UpstreamRequest {
  return { url, method: 'GET', headers: buildHeaders({ accept: 'application/json', ...auth }, target) };
}

/** Unix seconds of an RFC 3339 time, 0 when absent or unreadable. */
export function unixSeconds(value: unknown): number {
  if (typeof value === 'number' && Number.isFinite(value)) return Math.floor(value);
  const ms = typeof value === 'string' ? Date.parse(value) : NaN;
  return Number.isNaN(ms) ? 0 : Math.floor(ms / 1000);
}

/**
 * An OpenAI-shaped model list (`{data: [...]}`, or a bare array as Together answers) as
 * entries; `owned_by` defaults to the provider.
 */
export function openAIModelList(upstream: unknown, adapter: { slug: string }): ModelEntry[] {
  const list = Array.isArray(upstream) ? upstream : (upstream as { data?: unknown })?.data;
  if (!Array.isArray(list)) return [];
  return list
    .filter((m): m is Record<string, unknown> => typeof m?.id === 'string')
    .map((m) => ({
      id: m.id as string,
      object: 'model' as const,
      created: unixSeconds(m.created ?? m.created_at),
      owned_by: typeof m.owned_by === 'string' ? m.owned_by : adapter.slug,
    }));
}

export function jsonPost(url: string, body: unknown, auth: Record<string, string>, target: ProviderTarget) {
  return {
    url,
    method: 'POST' as const,
    headers: buildHeaders({ 'content-type': 'application/json', ...auth }, target),
    body: JSON.stringify(body),
  };
}

/**
 * OpenAI-shaped usage. `cacheWrite` (prompt tokens written to a prompt cache, which Anthropic
 * and Bedrock bill apart) has no OpenAI field: it is reported as
 * `prompt_tokens_details.cache_write_tokens`, and only when there were any.
 */
export function makeUsage(prompt: number, completion: number, cached?: number, cacheWrite?: number): Usage {
  const usage: Usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  if (cached !== undefined) usage.prompt_tokens_details = { cached_tokens: cached };
  if (cacheWrite) usage.prompt_tokens_details = { ...usage.prompt_tokens_details, cache_write_tokens: cacheWrite };
  return usage;
}

type ChunkContext = Pick<TranslateContext, 'model' | 'created' | 'includeUsage'> & { id: string };

/** One chunk for choice 0. With include_usage every non-usage chunk carries `usage: null`. */
export function chunk(ctx: ChunkContext, delta: ChunkDelta, finish: FinishReason | null = null): ChatCompletionChunk {
  const out: ChatCompletionChunk = {
    id: ctx.id,
    object: 'chat.completion.chunk',
    created: ctx.created,
    model: ctx.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  };
  if (ctx.includeUsage) out.usage = null;
  return out;
}

/** The extra chunk sent before [DONE] when the caller asked for include_usage. */
export function usageChunk(ctx: ChunkContext, usage: Usage): ChatCompletionChunk {
  return { id: ctx.id, object: 'chat.completion.chunk', created: ctx.created, model: ctx.model, choices: [], usage };
}

export function completion(
  ctx: TranslateContext,
  parts: { id?: string; content: string | null; toolCalls?: ToolCall[]; finish: FinishReason; usage?: Usage },
): ChatCompletion {
  const message: ChatCompletion['choices'][number]['message'] = {
    role: 'assistant',
    content: parts.content,
    refusal: null,
  };
  if (parts.toolCalls?.length) message.tool_calls = parts.toolCalls;
  const out: ChatCompletion = {
    id: parts.id || ctx.id,
    object: 'chat.completion',
    created: ctx.created,
    model: ctx.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: parts.finish }],
  };
  if (parts.usage) out.usage = parts.usage;
  return out;
}

/** A stream error for an upstream chunk that is not the JSON it should be. */
export function invalidChunk(provider: string): StreamError {
  return { status: 502, message: `${provider} sent a stream event that is not valid JSON.`, type: 'upstream_error', code: 'invalid_upstream_chunk' };
}

/** Parse one SSE data payload; undefined when it is not a JSON object. */
export function parseJson(data: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(data);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Text of an OpenAI `string | parts[]` content, for a provider that takes one string: its
 * text parts joined by a blank line, so separate blocks (a `<system-reminder>` and the
 * prompt after it) do not run together.
 */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((p): p is { type: 'text'; text: string } => p?.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text)
    .join(PART_SEPARATOR);
}

/** Between text parts joined into one string. */
export const PART_SEPARATOR = '\n\n';

const textOnlyList = (content: unknown): content is Array<{ type: 'text'; text: string }> =>
  Array.isArray(content) && content.length > 0 && content.every((p) => p?.type === 'text' && typeof p.text === 'string');

/**
 * The request with the text-only part lists of non-user messages joined into one string
 * (PART_SEPARATOR between parts); the same object when there are none (the usual case).
 */
export function withNonUserTextJoined<T extends { messages: Array<{ role: string; content?: unknown }> }>(body: T): T {
  const joins = (m: T['messages'][number]) => m.role !== 'user' && textOnlyList(m.content);
  if (!body.messages.some(joins)) return body;
  return { ...body, messages: body.messages.map((m) => (joins(m) ? { ...m, content: textOf(m.content) } : m)) };
}

/** `stop` as an array (OpenAI accepts a bare string), or undefined when absent. */
export function stopList(stop: string | string[] | null | undefined): string[] | undefined {
  if (stop == null) return undefined;
  return Array.isArray(stop) ? stop : [stop];
}

/** Copy only the keys whose value is not undefined/null, keeping insertion order. */
export function compact<T extends Record<string, unknown>>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined && v !== null)) as Partial<T>;
}
