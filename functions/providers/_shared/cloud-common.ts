/**
 * Helpers shared by the cloud adapters (Azure OpenAI, Gemini, Vertex AI, Bedrock) on top
 * of openai-shape.ts: lazily built default hosts, validated settings that name their
 * header, data: URLs, embeddings encoding, multi-choice chunks and stream errors.
 */
import { badRequest } from '../../shared/errors';
import { chunk } from './openai-shape';
import type { ChatCompletionChunk, FinishReason, ProviderTarget, StreamError, TranslateContext } from '../types';
import { providerErrorFacts } from './error-body';

/**
 * `target.customHost` (trailing slashes stripped) when set, else the provider's default
 * root, built only then (it may need settings a custom host makes unnecessary).
 */
export function rootUrl(target: ProviderTarget, defaultRoot: () => string): string {
  const custom = target.customHost?.trim();
  return custom ? custom.replace(/\/+$/, '') : defaultRoot();
}

/**
 * A setting that builds a hostname or a path segment: required and matched against the
 * provider table's pattern for it, else a 400 that names the header to send.
 */
export function requireSetting(value: string | undefined, setting: { header: string; pattern?: RegExp }, what: string): string {
  const { header, pattern } = setting;
  const v = value?.trim();
  if (!v) throw badRequest(`Missing ${what}: send the \`${header}\` header.`, header, 'missing_provider_setting');
  if (pattern && !pattern.test(v)) {
    throw badRequest(`Invalid ${what} '${v.slice(0, 80)}' in \`${header}\`.`, header, 'invalid_provider_setting');
  }
  return v;
}

/** An OpenAI content part read loosely (callers send any shape; fields are checked on use). */
export interface LoosePart {
  type?: unknown;
  text?: unknown;
  image_url?: { url?: unknown };
  input_audio?: { data?: unknown; format?: unknown };
  file?: { file_data?: unknown; file_id?: unknown; filename?: unknown; format?: unknown; mime_type?: unknown };
}

/** `data:<mime>;base64,<data>` -> its parts, or undefined for any other URL. */
export function parseDataUrl(url: string): { mimeType: string; data: string } | undefined {
  const m = /^data:([\w.+-]+\/[\w.+-]+)?((?:;[\w-]+=[^;,]*)*);base64,(.*)$/s.exec(url);
  return m ? { mimeType: m[1] ?? 'application/octet-stream', data: m[3]!.replace(/\s+/g, '') } : undefined;
}

/** JSON.parse of tool-call arguments; a 400 naming the field when they are not a JSON object. */
export function parseArguments(args: string | undefined, param: string): Record<string, unknown> {
  if (!args?.trim()) return {};
  try {
    const parsed: unknown = JSON.parse(args);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // fall through to the 400 below
  }
  throw badRequest(`${param} must be a JSON object encoded as a string.`, param, 'invalid_tool_arguments');
}

/** Float embedding as OpenAI returns it: numbers, or base64 of little-endian float32. */
export function encodeEmbedding(values: number[], format: string | undefined): number[] | string {
  if (format !== 'base64') return values;
  const floats = new Float32Array(values);
  return Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength).toString('base64');
}

/** OpenAI embeddings input as a list of strings (token arrays cannot be translated). */
export function stringInputs(input: unknown, provider: string): string[] {
  const list = typeof input === 'string' ? [input] : input;
  if (!Array.isArray(list) || list.length === 0 || !list.every((s) => typeof s === 'string')) {
    throw badRequest(`${provider} embeddings take \`input\` as a string or a non-empty array of strings.`, 'input', 'invalid_input');
  }
  return list as string[];
}

/** openai-shape's `chunk` for any choice index (Gemini answers `n > 1` candidates). */
export function choiceChunk(
  ctx: TranslateContext,
  delta: ChatCompletionChunk['choices'][number]['delta'],
  finish: FinishReason | null,
  index: number,
): ChatCompletionChunk {
  const out = chunk(ctx, delta, finish);
  out.choices[0]!.index = index;
  return out;
}

/** A stream error from a provider error body `{error:{code,message,status|type}}`. */
export function streamErrorFrom(body: unknown, fallbackStatus: number): StreamError {
  const err = ((body as { error?: Record<string, unknown> })?.error ?? {}) as Record<string, unknown>;
  const numeric = typeof err.code === 'number' ? err.code : Number(err.status ?? err.code);
  const status = Number.isInteger(numeric) && numeric >= 400 && numeric < 600 ? numeric : fallbackStatus;
  const code = typeof err.status === 'string' ? err.status : typeof err.code === 'string' ? err.code : null;
  return {
    status,
    message: providerErrorFacts(body).message ?? 'The provider reported an error mid-stream.',
    type: typeof err.type === 'string' ? err.type : status === 429 ? 'rate_limit_error' : 'upstream_error',
    code,
  };
}
