/**
 * One factory for every provider that speaks the OpenAI wire format. The
 * request body passes through except for a provider's `mapRequest` quirks (and Anthropic
 * `cache_control` marks, which OpenAI-shaped providers refuse: _shared/cache-marks.ts). A provider
 * with finish-reason fixes or a stream quirk also gets `response` fixes and a stream
 * translator; the others have no translator, so the pipeline pipes their bytes.
 */
import { badRequest } from '../../shared/errors';
import type { ProviderSettingName } from '../../shared/provider-table';
import { invalidChunk, jsonPost, parseJson, requireKey, resolveBase, withNonUserTextJoined } from './openai-shape';
import { withoutCacheMarks } from './cache-marks';
import { providerErrorFacts } from './error-body';
import { applyParamRules } from './param-rules';
import { sseTranslator } from './sse';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatRequest,
  FinishReason,
  ParamRule,
  ProviderAdapter,
  ProviderTarget,
  StreamError,
  StreamTranslator,
  TranslateContext,
  Usage,
} from '../types';

export interface CompatOptions {
  slug: string;
  name: string;
  defaultBaseUrl: string;
  /** Path of chat completions under the base URL. */
  chatPath?: string;
  /** Path of embeddings under the base URL; absent when the provider has none. */
  embeddingsPath?: string;
  audio?: ProviderAdapter['audio'];
  /** False when the provider needs no key (Ollama); a key, if given, is still sent. */
  requiresKey?: boolean;
  /**
   * Set for servers with no public address (self-hosted, or a per-account URL): the
   * request must name one with `x-gateway-custom-host`. The text is an example base URL.
   */
  customHostRequired?: string;
  /** False when the provider has no model list the gateway can read. */
  models?: false;
  /** Overrides how the base URL is derived from the target. */
  baseUrl?(target: ProviderTarget): string;
  /**
   * Chat fields the provider rejects or renames, each rule citing the provider's documentation.
   * Applied before `mapRequest`; listed in docs/providers.md by `npm run providers-table`.
   */
  params?: readonly ParamRule[];
  /** Provider-specific rewrite of the (OpenAI) chat request body. */
  mapRequest?(body: ChatRequest): Record<string, unknown>;
  /**
   * True when the provider takes lists of text parts on every role, as OpenAI does. Others
   * get the text-only lists of system, developer, assistant and tool messages as one string,
   * parts apart by a blank line (several refuse a list there: Groq wants a string on system).
   */
  textPartsOnEveryRole?: true;
  /** Provider finish reasons that OpenAI does not have. */
  finishReasons?: Record<string, FinishReason>;
  /**
   * Usage a provider puts somewhere other than `usage` in a stream chunk (Groq: `x_groq`):
   * returns it and takes it off the chunk. Declaring it makes the stream translated.
   */
  streamUsage?(chunk: Record<string, unknown>): Usage | undefined;
  /** Streams carry usage only with `stream_options.include_usage` (see ChatAdapter). */
  streamUsageOnRequest?: boolean;
}

type StreamUsageHook = CompatOptions['streamUsage'];

export function createOpenAICompatible(opts: CompatOptions): ProviderAdapter {
  const baseUrl = (t: ProviderTarget) => {
    if (opts.customHostRequired && !t.customHost?.trim()) throw missingCustomHost(opts.name, opts.customHostRequired);
    return opts.baseUrl ? opts.baseUrl(t) : resolveBase(t, opts.defaultBaseUrl);
  };
  const authHeaders = (t: ProviderTarget): Record<string, string> => {
    if (opts.requiresKey === false && !t.apiKey) return {};
    return { authorization: `Bearer ${requireKey(t, opts.name)}` };
  };
  const fixFinish = (reason: unknown) => (typeof reason === 'string' && opts.finishReasons?.[reason] ? opts.finishReasons[reason] : reason);
  const translates = Boolean(opts.finishReasons || opts.streamUsage);

  const requiredSettings: ProviderSettingName[] = [];
  if (opts.requiresKey !== false) requiredSettings.push('api_key');
  if (opts.customHostRequired) requiredSettings.push('custom_host');

  const adapter: ProviderAdapter = {
    slug: opts.slug,
    name: opts.name,
    shape: 'openai-compatible',
    requiredSettings,
    baseUrl,
    ...(opts.customHostRequired ? { customHostExample: opts.customHostRequired } : {}),
    authHeaders,
    chat: {
      request(body, target) {
        const unmarked = opts.textPartsOnEveryRole ? withoutCacheMarks(body) : withNonUserTextJoined(withoutCacheMarks(body));
        const ruled = opts.params ? (applyParamRules(unmarked, opts.params, opts.name) as ChatRequest) : unmarked;
        const upstream = opts.mapRequest ? opts.mapRequest(ruled) : ruled;
        return jsonPost(baseUrl(target) + (opts.chatPath ?? '/chat/completions'), upstream, authHeaders(target), target);
      },
      response(upstream) {
        const out = upstream as ChatCompletion;
        if (!opts.finishReasons || !Array.isArray(out?.choices)) return out;
        return { ...out, choices: out.choices.map((c) => ({ ...c, finish_reason: fixFinish(c.finish_reason) as FinishReason })) };
      },
      streamUsageOnRequest: opts.streamUsageOnRequest,
    },
  };
  if (translates) adapter.chat!.stream = (ctx) => compatStream(opts.name, ctx, fixFinish, opts.streamUsage);
  if (opts.embeddingsPath) {
    const path = opts.embeddingsPath;
    adapter.embeddings = { request: (body, target) => jsonPost(baseUrl(target) + path, body, authHeaders(target), target) };
  }
  if (opts.audio) adapter.audio = opts.audio;
  if (opts.params) adapter.paramRules = opts.params;
  if (opts.models === false) adapter.models = false;
  return adapter;
}

function missingCustomHost(name: string, example: string) {
  return badRequest(
    `${name} has no public address: name your server with the \`x-gateway-custom-host\` header (e.g. ${example}).`,
    'x-gateway-custom-host',
    'missing_custom_host',
  );
}

/** An OpenAI-style error object found in a stream (`data: {"error":{...}}`). */
export function streamErrorOf(error: unknown): StreamError {
  const e = (error && typeof error === 'object' ? error : { message: String(error) }) as Record<string, unknown>;
  return {
    status: typeof e.code === 'number' ? e.code : typeof e.status === 'number' ? e.status : 502,
    message: providerErrorFacts({ error: e }).message ?? 'The provider reported an error mid-stream.',
    type: typeof e.type === 'string' ? e.type : 'upstream_error',
    code: typeof e.code === 'string' ? e.code : null,
  };
}

/**
 * Re-emits OpenAI chunks with fixed finish reasons. Usage, wherever the provider puts it
 * (a `choices: []` chunk, the last content chunk, or where `streamUsage` finds it), is taken off
 * the chunks and sent once, as OpenAI does, in a final usage chunk when the caller asked.
 */
function compatStream(
  name: string,
  ctx: TranslateContext,
  fixFinish: (r: unknown) => unknown,
  streamUsage?: StreamUsageHook,
  onDone?: () => void,
): StreamTranslator {
  let usage: Usage | undefined;
  let last: ChatCompletionChunk | undefined;
  return sseTranslator({
    usage: () => usage,
    event(ev, out, done) {
      if (ev.data.trim() === '[DONE]') {
        onDone?.();
        return done();
      }
      const obj = parseJson(ev.data);
      if (!obj) {
        out.error = invalidChunk(name);
        return;
      }
      if (obj.error) {
        out.error = streamErrorOf(obj.error);
        return;
      }
      const elsewhere = streamUsage?.(obj);
      const found = (obj.usage ?? elsewhere) as Usage | undefined;
      if (found) usage = found;
      const c = obj as unknown as ChatCompletionChunk;
      if (!Array.isArray(c.choices) || c.choices.length === 0) {
        if (!found) out.chunks.push(c);
        return;
      }
      if (ctx.includeUsage) c.usage = null;
      else delete c.usage;
      for (const choice of c.choices) choice.finish_reason = fixFinish(choice.finish_reason) as FinishReason | null;
      last = c;
      out.chunks.push(c);
    },
    finish(out) {
      if (!ctx.includeUsage || !usage) return;
      out.chunks.push({
        id: last?.id ?? ctx.id,
        object: 'chat.completion.chunk',
        created: last?.created ?? ctx.created,
        model: last?.model ?? ctx.model,
        choices: [],
        usage,
      });
    },
  });
}

/**
 * OpenAI chunks in, the same chunks out: lets the pipeline inspect a stream it would
 * otherwise pipe. `onDone` learns that the provider sent its terminal `[DONE]`.
 */
export const reframeOpenAIStream = (ctx: TranslateContext, name = 'provider', onDone?: () => void): StreamTranslator =>
  compatStream(name, ctx, (r) => r, undefined, onDone);
