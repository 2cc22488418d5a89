/**
 * Input-token counts of a chat request on any provider (docs/token-counting.md), for the
 * count routes of every dialect (`/v1/messages/count_tokens`, `/v1/responses/input_tokens`,
 * Gemini `:countTokens`). The request is resolved as a chat call would be (its config's
 * first target, or `x-gateway-provider`; managed providers and `override_params` applied),
 * then counted by, in order of preference:
 *
 * - `provider`: the provider's own count API (Anthropic, Bedrock, Gemini, Vertex AI);
 * - `tokenizer`: OpenAI-family models (OpenAI, Azure OpenAI, or an OpenAI model id on any
 *   provider), locally with the model's tokenizer;
 * - `estimate`: anything else, a documented estimate.
 *
 * A count is free: it takes no rate-limit unit and has no price.
 */
import type { Readable } from 'node:stream';
import { config } from '../shared/config';
import { callerClosedRequest, GatewayError, upstreamError, type ErrorType } from '../shared/errors';
import type { ConfigNode } from '../shared/gateway-config';
import type { CallerRequest } from '../shared/http/types';
import { AbortError, readBody, sendUpstream } from '../shared/net/http-client';
import type { ChatRequest } from '../providers/types';
import { parseGatewayOptions } from './headers';
import { providerErrorFactsOfText } from '../providers/_shared/error-body';
import type { RequestFacts } from '../spend/request-record';
import { resolveConfig, resolveLeaf, type ResolvedTarget } from './target';
import { estimateCount, isOpenAIModel, tokenizerCount } from './token-count-local';
import { readJsonBody } from './upstream-body';

export type TokenCountMethod = 'provider' | 'tokenizer' | 'estimate';

export interface TokenCount {
  tokens: number;
  method: TokenCountMethod;
  /** The model counted for (override_params applied). */
  model: string;
  /** The provider slug of the target counted for. */
  provider: string;
  /** `x-gateway-provider` and `x-gateway-token-count-method`, for the route's answer. */
  headers: Record<string, string>;
}

/** Every count answer says how it was made. */
export const TOKEN_COUNT_METHOD_HEADER = 'x-gateway-token-count-method';

/** Providers whose models are OpenAI's, whatever the model id (an Azure deployment name). */
const OPENAI_PROVIDERS = new Set(['openai', 'azure-openai']);
/** A provider's error body larger than this is not read for its message. */
const MAX_ERROR_BODY = 64 * 1024;

/** The fields of a chat request that make up its input; sampling settings and the like are left out. */
const INPUT_FIELDS = ['model', 'messages', 'tools', 'tool_choice', 'parallel_tool_calls', 'response_format', 'thinking'] as const;

const inputOf = (chat: ChatRequest): ChatRequest =>
  Object.fromEntries(INPUT_FIELDS.filter((f) => chat[f] !== undefined).map((f) => [f, chat[f]])) as ChatRequest;

/** The config's first target, with the `override_params` and `request_timeout` it inherits. */
function firstLeaf(node: ConfigNode): ConfigNode {
  let leaf = node;
  let overrides = node.override_params;
  let timeout = node.request_timeout;
  while (leaf.targets?.length) {
    leaf = leaf.targets[0]!;
    overrides = leaf.override_params || overrides ? { ...overrides, ...leaf.override_params } : undefined;
    timeout = leaf.request_timeout ?? timeout;
  }
  return { ...leaf, override_params: overrides, request_timeout: timeout };
}

export function methodFor(resolved: ResolvedTarget, model: string): TokenCountMethod {
  if (resolved.adapter.countTokens) return 'provider';
  return OPENAI_PROVIDERS.has(resolved.adapter.slug) || isOpenAIModel(model) ? 'tokenizer' : 'estimate';
}

/** The input tokens of `chat` on the target the request resolves to; `log` records provider, model and method. */
export async function countChatTokens(req: CallerRequest, chat: ChatRequest, log: RequestFacts): Promise<TokenCount> {
  const options = parseGatewayOptions(req.headers);
  log.metadata = options.metadata;
  const leaf = firstLeaf((await resolveConfig(req)).config);
  const resolved = await resolveLeaf(leaf, req.auth.workspaceId);
  const body = inputOf(leaf.override_params ? { ...chat, ...leaf.override_params } : chat);
  const provider = resolved.adapter.slug;
  const method = methodFor(resolved, body.model);
  Object.assign(log, { provider, managedProvider: resolved.managedProvider, model: body.model });
  log.extra = { ...log.extra, token_count_method: method };
  const tokens =
    method === 'provider'
      ? await providerCount(req, resolved, body, log, [options.timeoutMs, leaf.request_timeout])
      : method === 'tokenizer'
        ? await tokenizerCount(body)
        : estimateCount(body);
  return { tokens, method, model: body.model, provider, headers: { 'x-gateway-provider': provider, [TOKEN_COUNT_METHOD_HEADER]: method } };
}

const ERROR_TYPES: Record<number, ErrorType> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  408: 'timeout_error',
  429: 'rate_limit_error',
};

/** The provider's refusal with its status and message, in the gateway's error (each route answers it in its dialect). */
async function providerRefusal(status: number, body: Readable, name: string): Promise<GatewayError> {
  const raw = await readBody(body, MAX_ERROR_BODY).then(
    (b) => b.toString('utf8'),
    () => '',
  );
  const type = ERROR_TYPES[status] ?? (status >= 500 ? 'upstream_error' : 'invalid_request_error');
  return new GatewayError(
    status,
    type,
    providerErrorFactsOfText(raw).message ?? `${name} answered the token count with status ${status}.`,
    null,
    'provider_error',
  );
}

/** The provider's own count API: one call, signed like its chat calls, bounded by the request's timeout. */
async function providerCount(
  req: CallerRequest,
  { adapter, target }: ResolvedTarget,
  body: ChatRequest,
  log: RequestFacts,
  timeouts: Array<number | undefined>,
): Promise<number> {
  const built = adapter.countTokens!.request(body, target);
  const signed = adapter.sign ? await adapter.sign(built, target) : built;
  const bounds = timeouts.filter((t): t is number => t !== undefined);
  const sent = Date.now();
  try {
    const response = await sendUpstream({
      ...signed,
      timeoutMs: bounds.length ? Math.min(...bounds) : config().defaultUpstreamTimeoutMs,
      signal: req.context.callerGone ?? req.context.signal,
      trustedHosts: config().trustedHosts,
    });
    if (response.status >= 300) throw await providerRefusal(response.status, response.body, adapter.name);
    const { json } = await readJsonBody({ status: response.status, headers: response.headers, body: response.body }, adapter.slug);
    const tokens = adapter.countTokens!.response(json);
    if (typeof tokens !== 'number' || !Number.isInteger(tokens) || tokens < 0) {
      throw upstreamError(`${adapter.name} answered the token count without a count.`, 'invalid_upstream_response');
    }
    return tokens;
  } catch (err) {
    if (err instanceof AbortError) throw callerClosedRequest();
    throw err;
  } finally {
    log.upstreamLatencyMs = Date.now() - sent;
  }
}
