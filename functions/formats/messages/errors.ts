/** Gateway errors in the Anthropic error shape, for the /v1/messages route. */
import type { GatewayError } from '../../shared/errors';
import type { StreamFailure } from '../sse';
import type { AnthropicErrorBody, AnthropicErrorType } from './types';

const BY_STATUS: Record<number, AnthropicErrorType> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

export function anthropicErrorType(failure: Pick<StreamFailure, 'status' | 'type'>): AnthropicErrorType {
  if (failure.type === 'timeout_error') return 'timeout_error';
  const status = failure.status ?? 500;
  return BY_STATUS[status] ?? (status < 500 ? 'invalid_request_error' : 'api_error');
}

export function anthropicErrorBody(failure: StreamFailure): AnthropicErrorBody {
  return { type: 'error', error: { type: anthropicErrorType(failure), message: failure.message } };
}

/** Status and body of a gateway error as Anthropic would answer it (same status). */
export function toAnthropicError(err: GatewayError): { status: number; body: AnthropicErrorBody; headers: Record<string, string> } {
  return { status: err.status, body: anthropicErrorBody(err), headers: err.headers };
}
