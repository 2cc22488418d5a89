import { config } from '../config';
import type { HttpResponse } from './types';

/**
 * Cross-origin calls from browsers (an app using the OpenAI SDK with
 * `dangerouslyAllowBrowser`, the Vercel AI SDK in a page), as OpenAI's API and the other
 * gateways allow them: the API under /v1 and /v1beta answers preflights before any key is
 * checked and marks its answers readable by the allowed origins (`CORS_ALLOWED_ORIGINS`:
 * `*`, the default, a comma-separated list, or empty for none). Credentials are never
 * allowed: the API authenticates by the key a caller sends, not by cookies, so a page can
 * use only a key it holds. The console shares the API's origin and gets none of this.
 */

const ALLOWED_METHODS = 'GET, POST, PUT, PATCH, DELETE';
/** Preflights are cached by browsers for two hours (Chromium's cap). */
const PREFLIGHT_MAX_AGE_SECONDS = '7200';

const isApiPath = (path: string) => path.startsWith('/v1/') || path === '/v1' || path.startsWith('/v1beta/');

/** The Access-Control-Allow-Origin value for this request, or undefined when none is given. */
function allowedOrigin(headers: Record<string, string>, path: string): string | undefined {
  const origin = headers.origin;
  if (!origin || !isApiPath(path)) return undefined;
  const allowed = config().corsAllowedOrigins;
  if (allowed.includes('*')) return '*';
  return allowed.includes(origin.toLowerCase()) ? origin : undefined;
}

/** A browser's preflight (OPTIONS with Origin and Access-Control-Request-Method) from an allowed origin: 204. */
export function preflightResponse(method: string, headers: Record<string, string>, path: string): HttpResponse | undefined {
  if (method !== 'OPTIONS' || !headers['access-control-request-method']) return undefined;
  const origin = allowedOrigin(headers, path);
  if (!origin) return undefined;
  const requested = headers['access-control-request-headers'];
  return {
    statusCode: 204,
    headers: {
      'access-control-allow-origin': origin,
      'access-control-allow-methods': ALLOWED_METHODS,
      ...(requested ? { 'access-control-allow-headers': requested } : {}),
      'access-control-max-age': PREFLIGHT_MAX_AGE_SECONDS,
      vary: 'origin, access-control-request-headers',
    },
  };
}

/** Headers that let an allowed origin read this answer (all of its headers included); undefined for others. */
export function corsResponseHeaders(headers: Record<string, string>, path: string): Record<string, string> | undefined {
  const origin = allowedOrigin(headers, path);
  if (!origin) return undefined;
  return origin === '*'
    ? { 'access-control-allow-origin': '*', 'access-control-expose-headers': '*' }
    : { 'access-control-allow-origin': origin, 'access-control-expose-headers': '*', vary: 'origin' };
}
