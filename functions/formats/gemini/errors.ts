/**
 * Gateway errors in Google's error shape (`{error:{code,message,status}}`), for the Gemini
 * routes: @google/genai and the AI SDK google provider read `code`, `message` and `status`.
 * Kept free of other imports: the gateway's route table uses it for kernel errors (auth,
 * routing) of these paths, so it weighs on the cold start.
 */
import type { HttpResponse } from '../../shared/http/types';

export interface GoogleErrorBody {
  error: { code: number; message: string; status: string };
}

const BY_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  405: 'INVALID_ARGUMENT',
  408: 'DEADLINE_EXCEEDED',
  409: 'ABORTED',
  413: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  501: 'UNIMPLEMENTED',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/** Google's canonical status name for an HTTP status. */
export function googleStatus(status: number): string {
  return BY_STATUS[status] ?? (status < 500 ? 'FAILED_PRECONDITION' : 'INTERNAL');
}

export function googleErrorBody(failure: { status?: number; message: string }): GoogleErrorBody {
  const code = failure.status ?? 500;
  return { error: { code, message: failure.message, status: googleStatus(code) } };
}

/**
 * A Google-shaped error response; `headers` (retry-after, rate-limit, gateway headers) are
 * kept. Google's shape has no `param`: a field the message does not name yet is added to it.
 */
export function googleErrorResponse(failure: { status: number; message: string; param?: string | null; headers?: Record<string, string> }): HttpResponse {
  const { param } = failure;
  const message = param && !failure.message.includes(param) ? `${failure.message} (field: ${param})` : failure.message;
  return {
    statusCode: failure.status,
    headers: { ...failure.headers, 'content-type': 'application/json' },
    body: JSON.stringify(googleErrorBody({ status: failure.status, message })),
  };
}
