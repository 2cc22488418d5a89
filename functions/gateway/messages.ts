/**
 * `POST /v1/messages` and `POST /v1/messages/count_tokens`: the Anthropic Messages API on
 * every provider that has chat. Loaded on first use (handler.ts), so none of the formats
 * code weighs on the gateway's cold start.
 *
 * - When every target the request can reach is Anthropic and no guardrail applies, the
 *   body goes to the provider's own `/messages` unchanged (native features, signatures and
 *   betas intact), through the same routing, limits, cache and log as any inference call.
 * - Otherwise (another provider, a mixed config, or guardrails, which judge chat
 *   messages) it is translated into a chat request and run by the chat core; the answer
 *   comes back as an Anthropic `message` or Anthropic stream events. A count is translated
 *   the same way and made by ./token-count.ts.
 *
 * Every error of these routes is in Anthropic's shape (`{type:"error", error:{type,message}}`),
 * so Anthropic clients raise their typed errors.
 */
import { Readable } from 'node:stream';
import { asGatewayError, type GatewayError } from '../shared/errors';
import type { ConfigNode } from '../shared/gateway-config';
import { json, mergeHeaders } from '../shared/http/response';
import { SSE_HEADERS } from '../shared/http/sse';
import { compose } from '../shared/http/middleware';
import type { GatewayRequest, HttpResponse, Middleware } from '../shared/http/types';
import { failureBeforeFirstBytes } from './upstream-body';
import { log as logger } from '../shared/telemetry/logger';
import { parseInput } from '../shared/validation';
import type { ChatCompletion } from '../providers/types';
import { encodeChunks } from '../formats/encode';
import { anthropicErrorType, toAnthropicError } from '../formats/messages/errors';
import { messagesToChat } from '../formats/messages/request';
import { chatToMessage, newMessageId } from '../formats/messages/response';
import { countTokensRequestSchema, messagesRequestSchema, type MessagesRequest } from '../formats/messages/schema';
import { MessagesStreamEncoder } from '../formats/messages/stream';
import { chatCall, type ChatFailure } from './chat-core';
import { responseHeadersFrom } from './headers';
import { dispatch, gatewayHeaders, type Dispatched } from './pipeline';
import { proxyRequest } from './proxy';
import { readProviderFailure } from './provider-failure';
import { watchUsage } from './messages-usage';
import { requestFacts, requestLog } from './request-log';
import type { RequestFacts } from '../spend/request-record';
import { checkEventStream } from './stream-check';
import { reachableProviders, resolveConfig } from './target';
import { idempotency } from '../shared/http/idempotency';
import { countChatTokens, TOKEN_COUNT_METHOD_HEADER } from './token-count';

/** Middleware: any error the rest of the route throws is answered in Anthropic's shape. */
export const anthropicErrors: Middleware = async (req, next) => {
  try {
    return await next();
  } catch (err) {
    const error = asGatewayError(err);
    if (error.status >= 500) logger.error('request failed', { route: 'messages', error: err instanceof Error ? err.message : String(err) }, req.context);
    return anthropicErrorResponse(error);
  }
};

function anthropicErrorResponse(error: GatewayError, headers: Record<string, string> = {}): HttpResponse {
  const shaped = toAnthropicError(error);
  // Guardrail refusals carry their hook_results; keep them next to the error.
  return json(shaped.status, { ...shaped.body, ...error.extra }, mergeHeaders(shaped.headers, headers));
}

function allNodes(node: ConfigNode): ConfigNode[] {
  return [node, ...(node.targets ?? []).flatMap(allNodes)];
}

/**
 * The provider slugs the request can reach (each leaf of its config, managed providers
 * resolved), and whether any guardrail applies on the way.
 */
export async function reachable(req: GatewayRequest): Promise<{ providers: string[]; guarded: boolean }> {
  const { config } = await resolveConfig(req);
  const nodes = allNodes(config);
  const providers = await reachableProviders(req, config);
  const guarded = nodes.some((n) => Boolean(n.input_guardrails?.length || n.output_guardrails?.length));
  return { providers, guarded };
}

export const allAnthropic = (providers: string[]) => providers.every((p) => p === 'anthropic');

/** The JSON body when it is one (for limits, conditions and logs); Anthropic judges the rest itself. */
function jsonBody(req: GatewayRequest): Record<string, unknown> {
  try {
    const body = req.json();
    return body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** Forward the request to Anthropic's own endpoint, body and `anthropic-*` headers as the caller sent them. */
async function native(req: GatewayRequest, log: RequestFacts, path: 'messages' | 'messages/count_tokens'): Promise<HttpResponse> {
  const sent = jsonBody(req);
  const model = typeof sent.model === 'string' ? sent.model : undefined;
  const d = await dispatch({
    req,
    log,
    model,
    params: sent,
    cacheRoute: path === 'messages' ? 'messages' : undefined,
    build: ({ adapter, target }, leaf) => {
      const upstream = proxyRequest(req, adapter, target, path);
      const version = req.headers['anthropic-version'];
      if (version) upstream.headers['anthropic-version'] = version;
      if (leaf.node.override_params) upstream.body = JSON.stringify({ ...sent, ...leaf.node.override_params });
      return upstream;
    },
    accept: path === 'messages' && sent.stream === true ? ({ body, headers }, { adapter }) => checkEventStream(body, headers, adapter.slug) : undefined,
  });
  Object.assign(log, d.facts, { stream: sent.stream === true });
  const { error, response } = d.routing.result;
  if (error) return anthropicErrorResponse(error, gatewayHeaders(d));
  // Anthropic's own answer (success or its Anthropic-shaped error), streamed back as received.
  const upstream = response!;
  const sse = String(upstream.headers['content-type'] ?? '').includes('text/event-stream');
  const failed = sse ? undefined : await failureBeforeFirstBytes(upstream.body);
  if (failed) return anthropicErrorResponse(failed, gatewayHeaders(d));
  const body = path === 'messages' && upstream.status < 300 ? watchUsage(upstream.body, sse, (usage) => (log.usage = usage)) : upstream.body;
  return { statusCode: upstream.status, headers: mergeHeaders(responseHeadersFrom(upstream.headers), gatewayHeaders(d)), body };
}

/** A failed chat call in Anthropic's shape, with the provider's status and message. */
export async function failureResponse(failure: ChatFailure): Promise<HttpResponse> {
  const d: Dispatched = failure.dispatched;
  const headers = gatewayHeaders(d);
  if (failure.error) return anthropicErrorResponse(failure.error, headers);
  const { status, message, retryAfter } = await readProviderFailure(failure.upstream!, d.resolved.adapter.name);
  if (retryAfter !== undefined) headers['retry-after'] = retryAfter;
  return json(status, { type: 'error', error: { type: anthropicErrorType({ status }), message } }, headers);
}

/** Translate the request to chat, run it, and answer as Anthropic would. */
async function translated(req: GatewayRequest, log: RequestFacts): Promise<HttpResponse> {
  const body = parseInput(messagesRequestSchema, req.json());
  const outcome = await chatCall({ req, body: messagesToChat(body), log });
  switch (outcome.kind) {
    case 'failure':
      return failureResponse(outcome);
    case 'completion': {
      const { hook_results, ...completion } = outcome.completion;
      const message = chatToMessage(completion as ChatCompletion, { id: newMessageId(), model: completion.model || body.model });
      return json(outcome.status, hook_results ? { ...message, hook_results } : message, outcome.headers);
    }
    case 'stream': {
      const encoder = new MessagesStreamEncoder({ id: newMessageId(), model: log.model ?? body.model });
      // Frames go out as they are produced; a caller going away aborts the provider call at once.
      const frames = Readable.from(encodeChunks(encoder, outcome.stream), { objectMode: false });
      frames.once('close', () => {
        if (!frames.readableEnded) outcome.stream.cancel();
      });
      return { statusCode: outcome.status, headers: mergeHeaders(SSE_HEADERS, outcome.headers), body: frames };
    }
  }
}

/**
 * With `x-gateway-api-key` sent, `x-api-key` is the provider's key, which is where Anthropic
 * clients put it; the gateway reads a provider key from `Authorization`, so it moves there.
 */
export function providerKeyFromXApiKey(req: GatewayRequest): GatewayRequest {
  const { headers } = req;
  if (!headers['x-gateway-api-key'] || !headers['x-api-key'] || headers.authorization) return req;
  return { ...req, headers: mergeHeaders(headers, { authorization: `Bearer ${headers['x-api-key']}` }) };
}

// The middleware is composed here, not in the route table: this module loads on first use.
export const messages = compose([anthropicErrors, requestLog('messages'), idempotency], async (sent) => {
  const req = providerKeyFromXApiKey(sent);
  const log = requestFacts(req);
  const { providers, guarded } = await reachable(req);
  return allAnthropic(providers) && !guarded ? native(req, log, 'messages') : translated(req, log);
});

/**
 * Anthropic's own count when every target is Anthropic; elsewhere the body is translated to
 * chat and counted by the token-count module (provider API, tokenizer or estimate).
 */
export const countTokens = compose([anthropicErrors, requestLog('messages.count_tokens')], async (sent) => {
  const req = providerKeyFromXApiKey(sent);
  const { providers } = await reachable(req);
  const log = requestFacts(req);
  if (allAnthropic(providers)) {
    log.extra = { ...log.extra, token_count_method: 'provider' };
    const res = await native(req, log, 'messages/count_tokens');
    return res.statusCode < 300 ? { ...res, headers: { ...res.headers, [TOKEN_COUNT_METHOD_HEADER]: 'provider' } } : res;
  }
  const body = parseInput(countTokensRequestSchema, req.json()) as MessagesRequest;
  const counted = await countChatTokens(req, messagesToChat(body), log);
  return json(200, { input_tokens: counted.tokens }, counted.headers);
});
