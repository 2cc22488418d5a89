/**
 * The one typed interface every provider adapter implements (issue «Data plane» item 3).
 * The gateway pipeline (functions/gateway) resolves a ProviderTarget from the request
 * headers, config or managed provider, then asks the adapter to build upstream requests
 * and translate responses. Adapters are pure: no I/O except `sign`, which only computes.
 */
import type { UpstreamRequest } from '../shared/net/upstream-request';
import type { ProviderSettingName, TargetSettings } from '../shared/provider-table';

/**
 * Everything known about where and how to call a provider for one request: the settings
 * of functions/shared/provider-table.ts (`apiKey` is the caller's or managed provider's
 * credential, `customHost` a base URL that replaces the default one, and the `azure`,
 * `vertex` and `aws` groups) placed as that table says.
 */
export interface ProviderTarget extends TargetSettings {
  /** Provider slug, e.g. `openai`, `anthropic`, `bedrock` (see registry). */
  provider: string;
  /** Extra request headers the caller asked to forward verbatim (x-gateway-forward-headers). */
  forwardHeaders?: Record<string, string>;
}

/** Defined with the HTTP client that sends it; re-exported for adapters and the pipeline. */
export type { UpstreamRequest };

/** OpenAI chat completion request as the caller sent it (validated loosely upstream). */
export type ChatRequest = {
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean } | null;
  max_tokens?: number;
  max_completion_tokens?: number;
  temperature?: number | null;
  top_p?: number | null;
  stop?: string | string[] | null;
  tools?: Array<{ type: 'function'; function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean } }>;
  tool_choice?: 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };
  parallel_tool_calls?: boolean;
  response_format?: { type: 'text' | 'json_object' | 'json_schema'; json_schema?: { name: string; schema?: Record<string, unknown>; strict?: boolean } };
  seed?: number;
  user?: string;
  n?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
  [other: string]: unknown;
};

export type ContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: string } }
  | { type: string; [k: string]: unknown };

export type ChatMessage =
  | { role: 'system' | 'developer'; content: string | ContentPart[]; name?: string }
  | { role: 'user'; content: string | ContentPart[]; name?: string }
  | {
      role: 'assistant';
      content?: string | ContentPart[] | null;
      name?: string;
      tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
    }
  | { role: 'tool'; content: string | ContentPart[]; tool_call_id: string };

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** `cache_write_tokens` includes `cache_write_1h_tokens` (Anthropic's one-hour cache writes, billed apart). */
  prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number; cache_write_1h_tokens?: number; audio_tokens?: number };
  completion_tokens_details?: { reasoning_tokens?: number; audio_tokens?: number };
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call';

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  system_fingerprint?: string | null;
  choices: Array<{
    index: number;
    message: {
      role: 'assistant';
      content: string | null;
      refusal?: string | null;
      tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
    };
    logprobs: unknown | null;
    finish_reason: FinishReason;
  }>;
  usage?: Usage;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  system_fingerprint?: string | null;
  choices: Array<{
    index: number;
    delta: {
      role?: 'assistant';
      content?: string | null;
      tool_calls?: Array<{ index: number; id?: string; type?: 'function'; function?: { name?: string; arguments?: string } }>;
    };
    logprobs?: unknown | null;
    finish_reason: FinishReason | null;
  }>;
  usage?: Usage | null;
}

/** An error that arrived inside a 200 stream (Anthropic `event: error`, Bedrock exception frame). */
export interface StreamError {
  status: number;
  message: string;
  type: string;
  code: string | null;
}

/**
 * Stateful translator of one upstream stream into OpenAI chunks. `push` takes raw bytes as
 * they arrive (SSE text or binary event-stream frames, split anywhere) and returns the
 * chunks now complete. `end` flushes. Usage is read off as soon as it is known.
 */
export interface StreamTranslator {
  push(bytes: Uint8Array): { chunks: ChatCompletionChunk[]; error?: StreamError };
  end(): { chunks: ChatCompletionChunk[]; error?: StreamError };
  usage(): Usage | undefined;
}

export interface TranslateContext {
  /** Model as the caller named it (echoed in the OpenAI-shaped output). */
  model: string;
  /** Id to use when the provider gives none. */
  id: string;
  /** Unix seconds. */
  created: number;
  /** Caller asked for `stream_options.include_usage`. */
  includeUsage: boolean;
}

export interface ChatAdapter {
  request(body: ChatRequest, target: ProviderTarget): UpstreamRequest;
  /** Upstream JSON (2xx) -> OpenAI chat.completion. */
  response(upstream: unknown, ctx: TranslateContext): ChatCompletion;
  /**
   * Upstream stream -> OpenAI chunks. Absent when the provider already streams OpenAI
   * chunks: the pipeline then pipes the bytes through untouched and only observes usage.
   */
  stream?(ctx: TranslateContext): StreamTranslator;
  /**
   * The provider streams usage only when asked (`stream_options.include_usage`): the
   * gateway asks, so every stream can be priced, and hides the usage from a caller who
   * did not ask (the stream is then re-framed rather than piped).
   */
  streamUsageOnRequest?: boolean;
}

export interface EmbeddingsRequest {
  model: string;
  input: string | string[] | number[] | number[][];
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
  user?: string;
  [other: string]: unknown;
}

export interface Embeddings {
  object: 'list';
  data: Array<{ object: 'embedding'; index: number; embedding: number[] | string }>;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

export interface EmbeddingsAdapter {
  request(body: EmbeddingsRequest, target: ProviderTarget): UpstreamRequest;
  /**
   * Absent when the provider already answers in the OpenAI shape. `request` is the body
   * sent to `request()`: adapters read `encoding_format` from it (base64 is encoded here).
   */
  response?(upstream: unknown, ctx: TranslateContext, request?: EmbeddingsRequest): Embeddings;
}

export interface RerankRequest {
  model: string;
  query: string;
  documents: Array<string | ({ text: string } & Record<string, unknown>)>;
  top_n?: number;
  return_documents?: boolean;
  max_tokens_per_doc?: number;
  priority?: number;
  rank_fields?: string[];
  truncation?: boolean;
  parameters?: Record<string, unknown>;
}

export interface RerankResult {
  object: 'list';
  id: string;
  results: Array<{ index: number; relevance_score: number; document?: { text: string } }>;
  model: string;
  usage: { search_units: number };
  provider: string;
}

export interface RerankAdapter {
  request(body: RerankRequest, target: ProviderTarget): UpstreamRequest;
  response(upstream: unknown, body: RerankRequest, ctx: TranslateContext): RerankResult;
}

export interface ProviderAdapter {
  slug: string;
  /** Human name for messages. */
  name: string;
  /** A declaration for the OpenAI-compatible layer, or an adapter with its own wire format. Absent: native. */
  shape?: 'openai-compatible' | 'native';
  /** Settings a request must carry (besides `model`); absent: just `api_key`. Listed by the provider catalog. */
  requiredSettings?: readonly ProviderSettingName[];
  /**
   * Base URL the generic proxy appends the caller's path (after /v1) to, honouring
   * `target.customHost`. Throws a GatewayError 400 when required settings are missing.
   */
  baseUrl(target: ProviderTarget): string;
  /** A provider with no public address (self-hosted): an example of the custom host it needs. */
  customHostExample?: string;
  /**
   * What the catalog lists as this provider's auth when `authHeaders` does not show it: the
   * header `sign` sets, or `iam-token` (a bearer token exchanged from the key). Absent: the
   * names of `authHeaders`, or `signed` when the provider signs.
   */
  catalogAuth?: readonly string[];
  /** Caller headers this provider always receives on unified routes (lower-case names). */
  callerHeaders?: readonly string[];
  /** The provider's own auth headers built from the target (e.g. `x-api-key`). */
  authHeaders(target: ProviderTarget): Record<string, string>;
  /**
   * Finish a fully built request, called last, after every header is set: SigV4 signing
   * (Bedrock), an IAM token in place of the key (watsonx), or the step before a stream
   * (Replicate creates the prediction and returns the GET of its event stream). It may call
   * the provider, through sendUpstream only (so the SSRF rules hold). Absent for providers
   * with plain header auth.
   */
  sign?(req: UpstreamRequest, target: ProviderTarget): Promise<UpstreamRequest>;
  chat?: ChatAdapter;
  /** Chat fields an OpenAI-shaped provider rejects or renames (declared with their source). */
  paramRules?: readonly ParamRule[];
  embeddings?: EmbeddingsAdapter;
  /** Relative paths (after /v1) for audio routes the provider serves OpenAI-style. */
  audio?: {
    speech?: boolean;
    transcriptions?: boolean;
    translations?: boolean;
    /**
     * Full upstream URL of an audio route when it is not `baseUrl() + '/audio/<route>'`
     * (Azure: per-deployment path plus `api-version`). Absent: the pipeline appends.
     */
    url?(route: 'speech' | 'transcriptions' | 'translations', target: ProviderTarget): string;
  };
  rerank?: RerankAdapter;
  /** The provider's own count of a chat request's input tokens (Anthropic, Bedrock, Gemini, Vertex AI). */
  countTokens?: CountTokensAdapter;
  /**
   * The provider's model list (GET /v1/models). Absent: `GET baseUrl()/models` answered in
   * OpenAI's shape; `false`: the provider has no list the gateway can read.
   */
  models?: ModelsAdapter | false;
}

/** One model of GET /v1/models, in OpenAI's shape. */
export interface ModelEntry {
  id: string;
  object: 'model';
  /** Unix seconds; 0 when the provider does not say. */
  created: number;
  owned_by: string;
}

export interface CountTokensAdapter {
  /** The count request for the chat request `body` (never streamed); signed by `sign` like any call. */
  request(body: ChatRequest, target: ProviderTarget): UpstreamRequest;
  /** The input-token count of the provider's 2xx answer; undefined when the answer holds none. */
  response(upstream: unknown): number | undefined;
}

export interface ModelsAdapter {
  request(target: ProviderTarget): UpstreamRequest;
  response(upstream: unknown, adapter: ProviderAdapter): ModelEntry[];
}

/** A top-level chat field, or `messages[].name` (the optional name on each message). */
export type ChatField = string;

/** Per-provider rules about OpenAI chat fields, applied by `_shared/param-rules.ts` (which says how). */
export interface ParamRule {
  /** Where the provider documents the rule. */
  source: string;
  /** Models the provider documents the rule for; absent: every model. */
  models?: RegExp;
  /** Rejected fields whose loss changes nothing the caller gets back: removed. */
  drop?: readonly ChatField[];
  /** Rejected fields whose loss would change the answer: a 400 naming the field. */
  refuse?: readonly ChatField[];
  /** Fields the provider takes under another name (a value already set under that name wins). */
  rename?: Readonly<Record<string, string>>;
}
