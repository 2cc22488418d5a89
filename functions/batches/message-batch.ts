/**
 * Anthropic's Message Batches API over the gateway's batch engine: the `message_batch` object
 * read off a stored batch, the create request's schema, and each answered line as Anthropic's
 * result line. A message batch is a batch of the engine (endpoint `/v1/messages`) whose id
 * starts with `msgbatch_`; its answers are the Messages route's, so a success is already an
 * Anthropic `message` and an error already Anthropic's error body.
 */
import { anthropicErrorType } from '../formats/messages/errors';
import type { AnthropicErrorBody } from '../formats/messages/types';
import type { GatewayRequest } from '../shared/http/types';
import { z } from '../shared/validation';
import type { BatchRecord, LineResult } from './types';
import { isObject } from '../shared/is-object';

export const MESSAGE_BATCH_PREFIX = 'msgbatch_';
export const MESSAGE_BATCH_ID = /^msgbatch_[0-9a-z]{26}$/;

/** Anthropic's limits on one Message Batch. */
export const MAX_MESSAGE_BATCH_REQUESTS = 100_000;
export const MAX_MESSAGE_BATCH_BYTES = 256 * 1024 * 1024;

export const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;

const requestSchema = z.strictObject({
  custom_id: z.string().check(z.regex(CUSTOM_ID, 'expected 1 to 64 characters of letters, digits, `_` and `-`')),
  // The rest of `params` is checked when the request runs, as Anthropic does: a bad one is an `errored` result.
  params: z.looseObject({
    model: z.string().check(z.minLength(1)),
    stream: z.optional(z.literal(false, 'a batch cannot stream: leave `stream` out or set it to false')),
  }),
});

export const createMessageBatchSchema = z.strictObject({
  requests: z
    .array(requestSchema)
    .check(z.minLength(1, 'expected at least one request'), z.maxLength(MAX_MESSAGE_BATCH_REQUESTS, `expected at most ${MAX_MESSAGE_BATCH_REQUESTS} requests`)),
});
export type MessageBatchCreate = z.infer<typeof createMessageBatchSchema>;

export type ProcessingStatus = 'in_progress' | 'canceling' | 'ended';

export interface MessageBatchRequestCounts {
  processing: number;
  succeeded: number;
  errored: number;
  canceled: number;
  expired: number;
}

export interface MessageBatch {
  id: string;
  type: 'message_batch';
  processing_status: ProcessingStatus;
  request_counts: MessageBatchRequestCounts;
  ended_at: string | null;
  created_at: string;
  expires_at: string;
  archived_at: string | null;
  cancel_initiated_at: string | null;
  results_url: string | null;
}

const rfc3339 = (seconds: number | null) => (seconds === null ? null : new Date(seconds * 1000).toISOString());

export function processingStatus(batch: Pick<BatchRecord, 'status'>): ProcessingStatus {
  switch (batch.status) {
    case 'cancelling':
      return 'canceling';
    case 'completed':
    case 'failed':
    case 'expired':
    case 'cancelled':
      return 'ended';
    default:
      return 'in_progress';
  }
}

/** What a request the batch ended without answering is: canceled, expired, or (a batch that failed as a whole) errored. */
export type Unanswered = 'canceled' | 'expired' | 'errored';
export const unansweredAs = (batch: Pick<BatchRecord, 'status'>): Unanswered =>
  batch.status === 'cancelled' ? 'canceled' : batch.status === 'expired' ? 'expired' : 'errored';

/**
 * While it runs, `processing` counts what has no answer yet and `succeeded`/`errored` what has
 * (Anthropic keeps those at zero until the end; the sum is the total either way). Once it
 * ends, what was never answered is `canceled` or `expired`.
 */
function requestCounts(batch: BatchRecord): MessageBatchRequestCounts {
  const counts = { processing: 0, succeeded: batch.completed, errored: batch.failed, canceled: 0, expired: 0 };
  const rest = Math.max(batch.total - batch.completed - batch.failed, 0);
  if (processingStatus(batch) !== 'ended') counts.processing = rest;
  else counts[unansweredAs(batch)] += rest;
  return counts;
}

/** The gateway's own URL for `path`, as the caller reached it (scheme, host, stage). */
export function ownUrl(req: Pick<GatewayRequest, 'headers' | 'basePath'>, path: string): string {
  const host = req.headers.host;
  if (!host) return `${req.basePath ?? ''}${path}`;
  // API Gateway always sets X-Forwarded-Proto; the local runtime, which serves plain HTTP, does not.
  const scheme = req.headers['x-forwarded-proto']?.split(',')[0]?.trim() || 'http';
  return `${scheme}://${host}${req.basePath ?? ''}${path}`;
}

export function toMessageBatch(batch: BatchRecord, req: Pick<GatewayRequest, 'headers' | 'basePath'>): MessageBatch {
  const status = processingStatus(batch);
  const endedAt = batch.completed_at ?? batch.cancelled_at ?? batch.expired_at ?? batch.failed_at;
  return {
    id: batch.id,
    type: 'message_batch',
    processing_status: status,
    request_counts: requestCounts(batch),
    ended_at: status === 'ended' ? rfc3339(endedAt) : null,
    created_at: rfc3339(batch.created_at)!,
    expires_at: rfc3339(batch.expires_at)!,
    archived_at: null,
    cancel_initiated_at: rfc3339(batch.cancelling_at),
    results_url: status === 'ended' ? ownUrl(req, `/v1/messages/batches/${batch.id}/results`) : null,
  };
}

type Result =
  | { type: 'succeeded'; message: unknown }
  | { type: 'errored'; error: AnthropicErrorBody & { request_id: string | null } }
  | { type: 'canceled' }
  | { type: 'expired' };

interface StoredLine {
  response: { status_code: number; request_id: string; body: unknown } | null;
  error: { code: string; message: string } | null;
}

/** An answer's body as Anthropic's error: the Messages route's own, or (an error it threw past its shaping) re-shaped. */
function errorBodyOf(status: number, body: unknown): AnthropicErrorBody {
  if (isObject(body) && body.type === 'error' && isObject(body.error)) return body as unknown as AnthropicErrorBody;
  const inner = isObject(body) && isObject(body.error) ? body.error : undefined;
  const message = typeof inner?.message === 'string' ? inner.message : typeof body === 'string' ? body : `The request failed with status ${status}.`;
  return { type: 'error', error: { type: anthropicErrorType({ status }), message } };
}

function resultOf(stored: StoredLine): Result {
  const { response, error } = stored;
  if (response && response.status_code >= 200 && response.status_code < 300) return { type: 'succeeded', message: response.body };
  if (response) return { type: 'errored', error: { ...errorBodyOf(response.status_code, response.body), request_id: response.request_id } };
  const type = error?.code === 'response_too_large' ? 'api_error' : 'invalid_request_error';
  return { type: 'errored', error: { type: 'error', error: { type, message: error?.message ?? 'The request could not be sent.' }, request_id: null } };
}

/** The results line of an answered request, without its newline. */
export function answeredLine(line: LineResult): string {
  return JSON.stringify({ custom_id: line.custom_id, result: resultOf(JSON.parse(line.text) as StoredLine) });
}

/** The results line of a request the batch ended without answering. */
export function unansweredLine(customId: string | null, as: Unanswered): string {
  const result: Result =
    as === 'errored'
      ? { type: 'errored', error: { type: 'error', error: { type: 'api_error', message: 'The batch failed before this request ran.' }, request_id: null } }
      : { type: as };
  return JSON.stringify({ custom_id: customId, result });
}
