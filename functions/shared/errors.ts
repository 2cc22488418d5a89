/**
 * The one error shape of the gateway: the OpenAI error body, so every
 * OpenAI SDK raises a typed error. Anything thrown that is not a GatewayError becomes
 * a 500 `server_error` without internals, except an AWS call (DynamoDB, KMS, Secrets
 * Manager) whose retryable failures used up its retries: a 503 `storage_unavailable`.
 */
export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'conflict_error'
  | 'rate_limit_error'
  | 'guardrail_error'
  | 'timeout_error'
  | 'upstream_error'
  | 'server_error';

export interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
  [extra: string]: unknown;
}

export class GatewayError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly headers: Record<string, string> = {},
    /** Extra top-level fields of the body, e.g. `hook_results` on guardrail errors. */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'GatewayError';
  }

  toBody(): ErrorBody {
    return {
      error: { message: this.message, type: this.type, param: this.param, code: this.code },
      ...this.extra,
    };
  }
}

export const badRequest = (message: string, param: string | null = null, code: string | null = null) =>
  new GatewayError(400, 'invalid_request_error', message, param, code);
export const unauthorized = (message: string, code = 'invalid_api_key') => new GatewayError(401, 'authentication_error', message, null, code);
export const notFound = (message: string, param: string | null = null) => new GatewayError(404, 'not_found_error', message, param, 'not_found');
/**
 * The OpenAI and Anthropic SDKs retry 408, 409, 429 and every 5xx by default, unless the
 * answer says `x-should-retry: false`. An error no retry can turn into a success carries
 * it (`final`), or is a 400 where OpenAI answers one (a state that forbids the request).
 */
export const NO_RETRY_HEADERS: Readonly<Record<string, string>> = Object.freeze({ 'x-should-retry': 'false' });

/** The same error, marked as one that no retry can fix. */
export const final = (err: GatewayError): GatewayError =>
  new GatewayError(err.status, err.type, err.message, err.param, err.code, { ...err.headers, ...NO_RETRY_HEADERS }, err.extra);

/** A race lost to another request (a conditional write): retrying can succeed, so the SDKs may. */
export const conflict = (message: string, code = 'conflict') => new GatewayError(409, 'conflict_error', message, null, code);
/** The name or key is taken: the same request will be refused again. */
export const alreadyExists = (message: string, code: string) => final(conflict(message, code));
/** The object's state forbids the request (a thread with an active run, a finished run or job): OpenAI answers 400. */
export const invalidState = (message: string, code: string, param: string | null = null) => badRequest(message, param, code);
export const payloadTooLarge = (limitBytes: number) =>
  new GatewayError(413, 'invalid_request_error', `Request body exceeds the limit of ${limitBytes} bytes.`, null, 'payload_too_large');
export const requestTimeout = (ms: number) => new GatewayError(408, 'timeout_error', `The request timed out after ${ms} ms.`, null, 'request_timeout');
/** No body bytes from the upstream for `ms` once its headers arrived. */
export const upstreamIdleTimeout = (ms: number) =>
  new GatewayError(504, 'timeout_error', `The upstream sent nothing for ${ms} ms while answering.`, null, 'upstream_idle_timeout');
/** Recorded (request log) when the caller went away before its answer; nobody receives it. */
export const callerClosedRequest = () =>
  new GatewayError(499, 'invalid_request_error', 'The caller closed the connection before the response was sent.', null, 'caller_closed_request');
export const upstreamError = (message: string, code = 'upstream_unreachable') => new GatewayError(502, 'upstream_error', message, null, code);
/** A provider answer past the gateway's size limits: the same request gets the same answer, so it is final. */
export const upstreamTooLarge = (message: string, code: 'upstream_response_too_large' | 'upstream_event_too_large') => final(upstreamError(message, code));
export const serverError = () =>
  new GatewayError(500, 'server_error', 'The gateway hit an internal error. Quote the trace id when reporting it.', null, 'internal_error');

/** The gateway's own AWS storage and keys (DynamoDB, KMS, Secrets Manager) kept failing to answer: worth the caller's retry, not an internal error. */
export const storageUnavailable = () =>
  new GatewayError(503, 'server_error', "The gateway's storage did not answer in time. Retry the request.", null, 'storage_unavailable');

const UNAVAILABLE = Symbol.for('ai-gateway.storage-unavailable');

/** Marks an AWS call's last failure when it was a retryable one (timeout, reset, throttling) and the retries ran out. */
export function markUnavailable<E>(err: E): E {
  if (err !== null && typeof err === 'object') Object.defineProperty(err, UNAVAILABLE, { value: true });
  return err;
}

/** Normalise anything thrown into a GatewayError: storage that stopped answering is a 503, other unknown errors a generic 500. */
export function asGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return err !== null && typeof err === 'object' && UNAVAILABLE in err ? storageUnavailable() : serverError();
}
