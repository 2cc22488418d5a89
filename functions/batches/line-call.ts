/**
 * One batch line through the gateway's own pipeline, in-process: the same route handler and
 * middleware an HTTP request to the line's endpoint runs (routing, configs, fallbacks,
 * guardrails, rate-limit policies, budgets, spend, the request log), as the batch's creator
 * and with the routing headers of the create request. Each line's log record carries the
 * batch in its metadata (`batch_id`) and its own trace id, which is the line's `request_id`.
 */
import type { Readable } from 'node:stream';
import { chatCompletions } from '../gateway/chat';
import { embeddings } from '../gateway/embeddings';
import { genericProxy } from '../gateway/proxy';
import { requestLog } from '../gateway/request-log';
import { asGatewayError } from '../shared/errors';
import { ID_PREFIX, newId } from '../shared/ids';
import { compose } from '../shared/http/middleware';
import { errorResponse } from '../shared/http/response';
import type { GatewayRequest, Handler, HttpResponse } from '../shared/http/types';
import { readBody } from '../shared/net/http-client';
import { callerLeft, flushAfterResponse, newRequestContext } from '../shared/telemetry/context';
import { log } from '../shared/telemetry/logger';
import type { BatchEndpoint, BatchRecord } from './types';

/** The largest answer a line keeps (the line item is a DynamoDB item, 400 KB at most). */
export const MAX_ANSWER_BYTES = 350 * 1024;

const handlers: Record<BatchEndpoint, () => Promise<Handler>> = {
  '/v1/chat/completions': async () => compose([requestLog('chat.completions')], chatCompletions),
  '/v1/embeddings': async () => compose([requestLog('embeddings')], embeddings),
  '/v1/responses': async () => compose([requestLog('responses')], (await import('../gateway/openai-responses/route')).createResponse),
  '/v1/messages': async () => (await import('../gateway/messages')).messages,
  '/v1/completions': async () => genericProxy,
};
const loaded = new Map<BatchEndpoint, Promise<Handler>>();
const handlerFor = (endpoint: BatchEndpoint) => {
  let handler = loaded.get(endpoint);
  if (!handler) loaded.set(endpoint, (handler = handlers[endpoint]()));
  return handler;
};

export interface LineAnswer {
  status: number;
  requestId: string;
  body: unknown;
  /** The answer's `retry-after`, in milliseconds, when it sent one. */
  retryAfterMs?: number;
}

function metadataHeader(batch: BatchRecord): string {
  let metadata: Record<string, unknown> = {};
  try {
    const parsed = JSON.parse(batch.headers['x-gateway-metadata'] ?? '{}') as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) metadata = parsed as Record<string, unknown>;
  } catch {
    // Checked when the batch was created; a bad value here only loses the caller's keys.
  }
  return JSON.stringify({ ...metadata, batch_id: batch.id });
}

function lineRequest(batch: BatchRecord, body: Record<string, unknown>): GatewayRequest {
  const traceId = newId(ID_PREFIX.log);
  const context = newRequestContext(traceId);
  context.logId = traceId;
  context.workspaceId = batch.workspace_id;
  context.route = `batch ${batch.endpoint}`;
  const raw = Buffer.from(JSON.stringify(body));
  return {
    method: 'POST',
    path: batch.endpoint,
    params: {},
    query: {},
    rawQuery: '',
    headers: { ...batch.headers, 'content-type': 'application/json', 'content-length': String(raw.length), 'x-gateway-metadata': metadataHeader(batch) },
    body: raw,
    json: () => body,
    traceId,
    context,
    auth: batch.auth,
    receivedAt: Date.now(),
  };
}

async function bodyText(body: HttpResponse['body']): Promise<string> {
  if (body === undefined) return '';
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) return body.toString('utf8');
  return (await readBody(body as Readable, MAX_ANSWER_BYTES * 4)).toString('utf8');
}

function retryAfterMs(headers: Record<string, string> | undefined): number | undefined {
  const value = Object.entries(headers ?? {}).find(([name]) => name.toLowerCase() === 'retry-after')?.[1];
  if (value === undefined) return undefined;
  const seconds = Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}

/** Runs the line's request once; its log record is written before this returns. */
export async function callLine(batch: BatchRecord, body: Record<string, unknown>, signal: AbortSignal): Promise<LineAnswer> {
  const req = lineRequest(batch, body);
  const handler = await handlerFor(batch.endpoint);
  // The batch's stop (cancel, expiry) aborts the upstream call as a caller leaving would.
  const stop = () => callerLeft(req.context);
  signal.addEventListener('abort', stop, { once: true });
  let res: HttpResponse;
  let text: string;
  try {
    res = await handler(req);
    text = await bodyText(res.body);
  } catch (err) {
    res = errorResponse(asGatewayError(err));
    text = res.body as string;
  } finally {
    signal.removeEventListener('abort', stop);
    await flushAfterResponse(req.context, (err) => log.error('batch line after-response task failed', { batch_id: batch.id, error: String(err) }, req.context));
  }
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON (a provider's plain-text error): kept as the string it was.
  }
  return { status: res.statusCode, requestId: req.traceId, body: parsed, retryAfterMs: retryAfterMs(res.headers) };
}
