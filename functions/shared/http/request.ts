import type { APIGatewayProxyEvent, LambdaFunctionURLEvent } from 'aws-lambda';
import { badRequest } from '../errors';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../json-depth';
import type { RequestContext } from '../telemetry/context';
import type { GatewayRequest } from './types';

const TRACE_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * What invokes an endpoint function: API Gateway REST (proxy event, v1) or a Lambda function
 * URL, directly or behind CloudFront (payload format 2.0: `rawPath`, `rawQueryString`,
 * comma-joined headers, cookies apart from them).
 */
export type HttpEvent = APIGatewayProxyEvent | LambdaFunctionURLEvent;

export const isFunctionUrlEvent = (event: HttpEvent): event is LambdaFunctionURLEvent => (event as { version?: unknown }).version === '2.0';

/** A 2.0 event's headers, with its cookies put back into the one `cookie` header the routes read. */
export function functionUrlHeaders(event: Pick<LambdaFunctionURLEvent, 'headers' | 'cookies'>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  if (event.cookies?.length) headers.cookie = event.cookies.join('; ');
  return headers;
}

/** A 2.0 event's path is as sent; API Gateway REST hands it over decoded, and so must this (a malformed escape stays as sent). */
export function functionUrlPath(rawPath: string | undefined): string {
  if (!rawPath) return '/';
  if (!rawPath.includes('%')) return rawPath;
  try {
    return decodeURIComponent(rawPath);
  } catch {
    return rawPath;
  }
}

export function normaliseHeaders(event: Pick<APIGatewayProxyEvent, 'headers' | 'multiValueHeaders'>): Record<string, string> {
  const headers: Record<string, string> = {};
  const multi = event.multiValueHeaders;
  if (multi) {
    for (const name in multi) {
      const values = multi[name];
      if (values?.length) headers[name.toLowerCase()] = values.length === 1 ? values[0]! : values.join(', ');
    }
  }
  const single = event.headers;
  if (single) {
    for (const name in single) {
      const value = single[name];
      if (value === undefined) continue;
      const lower = name.toLowerCase();
      if (headers[lower] === undefined) headers[lower] = value;
    }
  }
  return headers;
}

/** Echo a well-formed caller trace id, otherwise make one. */
export function traceIdFrom(headers: Record<string, string>, generate: () => string): string {
  const given = headers['x-gateway-trace-id'];
  return given && TRACE_ID_PATTERN.test(given) ? given : generate();
}

function rawQueryFrom(event: APIGatewayProxyEvent): { query: Record<string, string>; rawQuery: string } {
  const query: Record<string, string> = {};
  const pairs: string[] = [];
  const multi = event.multiValueQueryStringParameters ?? {};
  const single = event.queryStringParameters ?? {};
  const names = new Set([...Object.keys(multi), ...Object.keys(single)]);
  for (const name of names) {
    const values = multi[name] ?? (single[name] !== undefined ? [single[name]!] : []);
    if (values[0] !== undefined) query[name] = values[0];
    for (const v of values) pairs.push(`${encodeURIComponent(name)}=${encodeURIComponent(v)}`);
  }
  return { query, rawQuery: pairs.join('&') };
}

/** `requestContext.path` is the path the caller sent (stage or base path included); `event.path` is it without them. */
function basePathOf(event: APIGatewayProxyEvent): string {
  const sent = event.requestContext?.path;
  return sent && event.path && sent.length > event.path.length && sent.endsWith(event.path) ? sent.slice(0, -event.path.length) : '';
}

/** A 2.0 event's query string: first value of each name, and the pairs re-encoded as the REST path builds them. */
function queryFromRawString(raw: string | undefined): { query: Record<string, string>; rawQuery: string } {
  const query: Record<string, string> = {};
  if (!raw) return { query, rawQuery: '' };
  const pairs: string[] = [];
  for (const [name, value] of new URLSearchParams(raw)) {
    if (query[name] === undefined) query[name] = value;
    pairs.push(`${encodeURIComponent(name)}=${encodeURIComponent(value)}`);
  }
  return { query, rawQuery: pairs.join('&') };
}

export function buildRequest(event: HttpEvent, context: RequestContext, headers: Record<string, string>, method: string, path: string): GatewayRequest {
  const body = event.body ? Buffer.from(event.body, event.isBase64Encoded ? 'base64' : 'utf8') : Buffer.alloc(0);
  const { query, rawQuery } = isFunctionUrlEvent(event) ? queryFromRawString(event.rawQueryString) : rawQueryFrom(event);
  let parsed: { value: unknown } | undefined;
  return {
    method,
    path,
    basePath: isFunctionUrlEvent(event) ? '' : basePathOf(event),
    params: {},
    query,
    rawQuery,
    headers,
    body,
    traceId: context.traceId,
    context,
    receivedAt: Date.now(),
    auth: undefined as never,
    json() {
      if (parsed) return parsed.value;
      if (body.length === 0) throw badRequest('The request body is empty; send a JSON object.', null, 'invalid_json');
      const text = body.toString('utf8');
      if (nestsDeeperThan(text)) {
        throw badRequest(`The request body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`, null, 'json_too_deep');
      }
      try {
        parsed = { value: JSON.parse(text) };
      } catch (err) {
        throw badRequest(`The request body is not valid JSON: ${(err as Error).message}`, null, 'invalid_json');
      }
      return parsed.value;
    },
  };
}
