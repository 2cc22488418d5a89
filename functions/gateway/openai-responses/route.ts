import { Readable } from 'node:stream';
import { encodeChunks } from '../../formats/encode';
import { inputItemsOf, responsesToChat, type ConversationItem } from '../../formats/responses/request';
import { chatToResponse, newResponseId, type ResponseContext } from '../../formats/responses/response';
import { responsesRequestSchema, type ResponsesRequest } from '../../formats/responses/schema';
import { ResponsesStreamEncoder } from '../../formats/responses/stream';
import type { ResponseObject } from '../../formats/responses/types';
import { badRequest, notFound } from '../../shared/errors';
import { namesAnyProvider } from '../../shared/auth/managed-provider';
import { listObject } from '../../shared/http/list';
import { json, mergeHeaders, ok } from '../../shared/http/response';
import { SSE_HEADERS } from '../../shared/http/sse';
import type { GatewayRequest, HttpResponse } from '../../shared/http/types';
import { log } from '../../shared/telemetry/logger';
import { parseInput } from '../../shared/validation';
import { chatCall } from '../chat-core';
import { forwardToProvider, genericProxy } from '../proxy';
import { requestFacts } from '../request-log';
import type { RequestFacts } from '../../spend/request-record';
import { openAIFailureResponse } from '../responses';
import { countChatTokens, TOKEN_COUNT_METHOD_HEADER } from '../token-count';
import { reachableProviders } from '../target';
import { deleteResponse, loadItems, loadResponse, storeResponse } from './store';

/**
 * `/v1/responses` (OpenAI's Responses API) on every provider. When every target the
 * request can reach speaks it natively (OpenAI, Azure OpenAI), the request is passed
 * through like any provider path, and OpenAI keeps the stored responses. Otherwise it is
 * translated through the chat core, both ways, streamed as Responses events, and (with
 * `store`, the default) kept by the gateway for `previous_response_id`, GET and DELETE.
 */

const NATIVE = new Set(['openai', 'azure-openai']);

/** Every target of the request's provider or config speaks the Responses API itself. */
export async function everyTargetNative(req: GatewayRequest): Promise<boolean> {
  return (await reachableProviders(req)).every((slug) => NATIVE.has(slug));
}

/** The proxy's path for this request: the part after /v1. */
const asProxied = (req: GatewayRequest): GatewayRequest => ({ ...req, params: { ...req.params, proxy: req.path.replace(/^\/v1\//, '') } });

export async function previousConversation(req: GatewayRequest, body: ResponsesRequest): Promise<ConversationItem[]> {
  if (!body.previous_response_id) return [];
  const stored = await loadResponse(req.auth.workspaceId, body.previous_response_id);
  if (!stored) {
    throw notFound(
      `No stored response '${body.previous_response_id}' in this workspace (expired, deleted, or created with store: false).`,
      'previous_response_id',
    );
  }
  return stored.conversation;
}

/**
 * Keep the finished response (store: true, the default) before the caller sees it end, so
 * a `previous_response_id` sent the moment it arrives finds it, on any container.
 */
export async function keep(req: GatewayRequest, body: ResponsesRequest, conversation: ConversationItem[], response: ResponseObject | undefined): Promise<void> {
  if (body.store === false || !response || response.status === 'failed') return;
  const input = inputItemsOf(body);
  try {
    await storeResponse(req.auth.workspaceId, { response, input, conversation: [...conversation, ...input, ...response.output] }, req.context);
  } catch (err) {
    // The answer matters more than its copy: it is sent; a later previous_response_id gets a 404 that says why.
    log.error('response not stored', { response_id: response.id, error: (err as Error).message }, req.context);
  }
}

/** The Responses SSE frames; the last one (completed or incomplete) waits for the store. */
async function* storedFrames(frames: AsyncIterable<string>, encoder: ResponsesStreamEncoder, store: (r: ResponseObject | undefined) => Promise<void>) {
  let kept = false;
  for await (const frame of frames) {
    if (!kept && encoder.response) {
      kept = true;
      await store(encoder.response);
    }
    yield frame;
  }
}

/** `item_reference` inputs replaced by the stored items they name (400 naming the one not found). */
export async function withReferencesResolved(req: GatewayRequest, body: ResponsesRequest): Promise<ResponsesRequest> {
  if (!Array.isArray(body.input)) return body;
  const ids = body.input.filter((i) => i.type === 'item_reference').map((i) => String((i as { id?: unknown }).id ?? ''));
  if (!ids.length) return body;
  const items = await loadItems(req.auth.workspaceId, ids);
  const input = body.input.map((item, i) => {
    if (item.type !== 'item_reference') return item;
    const found = items.get(String((item as { id?: unknown }).id ?? ''));
    if (!found)
      throw badRequest(
        `No stored item '${String((item as { id?: unknown }).id)}' in this workspace (expired, or from a response created with store: false).`,
        `input[${i}].id`,
        'item_not_found',
      );
    return found as typeof item;
  });
  return { ...body, input };
}

async function translated(req: GatewayRequest, requested: ResponsesRequest, log: RequestFacts): Promise<HttpResponse> {
  const body = await withReferencesResolved(req, requested);
  const conversation = await previousConversation(req, body);
  const chat = responsesToChat(body, conversation);
  const outcome = await chatCall({ req, body: chat, log });
  const ctx: ResponseContext = { id: newResponseId(), createdAt: Math.floor(Date.now() / 1000), request: body, model: log.model ?? chat.model ?? '' };
  switch (outcome.kind) {
    case 'failure':
      return openAIFailureResponse(outcome.dispatched);
    case 'completion': {
      const response = chatToResponse(outcome.completion, ctx);
      await keep(req, body, conversation, response);
      return json(outcome.status, response, outcome.headers);
    }
    case 'stream': {
      const encoder = new ResponsesStreamEncoder(ctx);
      const frames = Readable.from(
        storedFrames(encodeChunks(encoder, outcome.stream), encoder, (r) => keep(req, body, conversation, r)),
        { objectMode: false },
      );
      return { statusCode: outcome.status, headers: mergeHeaders(SSE_HEADERS, outcome.headers), body: frames };
    }
  }
}

/**
 * Whether a passed-through request may be answered from the response cache: only with
 * `store: false`. A stored response is the provider's object under its own id (fetched,
 * continued with `previous_response_id`, deleted); a replayed copy would hand a second
 * caller the first one's id.
 */
function replayable(req: GatewayRequest): boolean {
  try {
    return (req.json() as { store?: unknown } | null)?.store === false;
  } catch {
    return false;
  }
}

/** `POST /v1/responses`, under the `requestLog` middleware. */
export async function createResponse(req: GatewayRequest): Promise<HttpResponse> {
  const log = requestFacts(req);
  if (await everyTargetNative(req)) {
    // Logged as the pass-through it is.
    log.route = 'proxy';
    return forwardToProvider(asProxied(req), replayable(req) ? 'responses' : undefined);
  }
  return translated(req, parseInput(responsesRequestSchema, req.json()), log);
}

/**
 * `POST /v1/responses/input_tokens`: OpenAI's own count on a native target; elsewhere the
 * body is translated to chat (stored items and `previous_response_id` resolved) and counted
 * by the token-count module. Under the `requestLog` middleware.
 */
export async function countInputTokens(req: GatewayRequest): Promise<HttpResponse> {
  if (await everyTargetNative(req)) {
    const log = requestFacts(req);
    log.extra = { ...log.extra, token_count_method: 'provider' };
    const res = await forwardToProvider(asProxied(req));
    return res.statusCode < 300 ? { ...res, headers: { ...res.headers, [TOKEN_COUNT_METHOD_HEADER]: 'provider' } } : res;
  }
  const body = await withReferencesResolved(req, parseInput(responsesRequestSchema, req.json()));
  const chat = responsesToChat(body, await previousConversation(req, body));
  const counted = await countChatTokens(req, { ...chat, model: chat.model ?? '' }, requestFacts(req));
  return json(200, { object: 'response.input_tokens', input_tokens: counted.tokens }, counted.headers);
}

/**
 * GET / DELETE `/v1/responses/{id}` and its input items: a request naming a native
 * provider reaches that provider's own store; otherwise the gateway's.
 */
async function nativeOrStored(req: GatewayRequest, stored: () => Promise<HttpResponse>): Promise<HttpResponse> {
  const namesProvider = namesAnyProvider(req.headers) || Boolean(req.auth.defaultConfig);
  if (namesProvider && (await everyTargetNative(req))) return genericProxy(asProxied(req));
  return stored();
}

async function found(req: GatewayRequest) {
  const stored = await loadResponse(req.auth.workspaceId, req.params.id!);
  if (!stored) throw notFound(`No stored response '${req.params.id}' in this workspace.`, 'id');
  return stored;
}

export const retrieveResponse = (req: GatewayRequest) => nativeOrStored(req, async () => ok((await found(req)).response));

export const deleteStoredResponse = (req: GatewayRequest) =>
  nativeOrStored(req, async () => {
    if (!(await deleteResponse(req.auth.workspaceId, req.params.id!))) throw notFound(`No stored response '${req.params.id}' in this workspace.`, 'id');
    return ok({ id: req.params.id, object: 'response.deleted', deleted: true });
  });

/** Input items, newest first by default as OpenAI lists them (`order=asc` for oldest first). */
export const listInputItems = (req: GatewayRequest) =>
  nativeOrStored(req, async () => {
    const { input } = await found(req);
    const order = req.query.order ?? 'desc';
    if (order !== 'asc' && order !== 'desc') throw badRequest("`order` must be 'asc' or 'desc'.", 'order');
    const items = input.map((item, i) => ({ id: (item as { id?: string }).id ?? `${req.params.id}_in_${i}`, ...item }));
    const ordered = order === 'desc' ? items.reverse() : items;
    const after = req.query.after ? ordered.findIndex((i) => i.id === req.query.after) + 1 : 0;
    const limit = Math.min(100, Math.max(1, Number(req.query.limit ?? 20) || 20));
    const page = ordered.slice(after, after + limit);
    return ok(listObject(page, after + limit < ordered.length));
  });
