import { badRequest } from '../shared/errors';

/** The optional gateway headers of docs/api.md, parsed and validated once per request. */
export interface GatewayOptions {
  metadata: Record<string, string>;
  /** x-gateway-request-timeout in milliseconds. */
  timeoutMs?: number;
  /** Header names (lower-cased) to forward verbatim to the provider. */
  forwardHeaders: string[];
  cacheForceRefresh: boolean;
  cacheNamespace?: string;
}

const MAX_METADATA_BYTES = 8 * 1024;
/** Values of the well-known keys are index keys of the request log (DynamoDB caps those at 2 KB). */
export const MAX_WELL_KNOWN_METADATA_CHARS = 512;
const WELL_KNOWN_METADATA_KEYS: readonly string[] = ['_user', '_prompt', '_organisation', '_environment'];

function parseMetadata(raw: string | undefined): Record<string, string> {
  if (raw === undefined || raw === '') return {};
  if (raw.length > MAX_METADATA_BYTES) {
    throw badRequest(`x-gateway-metadata exceeds ${MAX_METADATA_BYTES} bytes.`, 'x-gateway-metadata', 'invalid_header');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw badRequest('x-gateway-metadata must be a JSON object, e.g. {"_user":"u-1"}.', 'x-gateway-metadata', 'invalid_header');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw badRequest('x-gateway-metadata must be a JSON object, e.g. {"_user":"u-1"}.', 'x-gateway-metadata', 'invalid_header');
  }
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(parsed as Record<string, unknown>)) {
    if (value === null || typeof value === 'object') {
      throw badRequest(`x-gateway-metadata.${key} must be a string, number or boolean.`, 'x-gateway-metadata', 'invalid_header');
    }
    out[key] = String(value);
    if (WELL_KNOWN_METADATA_KEYS.includes(key) && out[key]!.length > MAX_WELL_KNOWN_METADATA_CHARS) {
      throw badRequest(`x-gateway-metadata.${key} must be at most ${MAX_WELL_KNOWN_METADATA_CHARS} characters.`, 'x-gateway-metadata', 'invalid_header');
    }
  }
  return out;
}

/**
 * The longest a gateway request can run: the endpoint Lambdas' 15-minute timeout
 * (infra/stacks/endpoint-function.ts), which bounds a streamed response too.
 */
export const PLATFORM_REQUEST_LIMIT_MS = 900_000;

/** The API contract sets no maximum: a longer timeout is capped to what the platform allows. */
function parseTimeout(raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const ms = Number(raw);
  if (!Number.isSafeInteger(ms) || ms <= 0) {
    throw badRequest('x-gateway-request-timeout must be a positive integer number of milliseconds.', 'x-gateway-request-timeout', 'invalid_header');
  }
  return Math.min(ms, PLATFORM_REQUEST_LIMIT_MS);
}

/** Accepts a JSON array of names or a comma-separated list. */
export function parseHeaderList(raw: string | undefined, header: string): string[] {
  if (raw === undefined || raw.trim() === '') return [];
  let names: unknown;
  if (raw.trim().startsWith('[')) {
    try {
      names = JSON.parse(raw);
    } catch {
      throw badRequest(`${header} must be a JSON array of header names.`, header, 'invalid_header');
    }
  } else names = raw.split(',').map((s) => s.trim());
  if (!Array.isArray(names) || !names.every((n) => typeof n === 'string' && /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(n))) {
    throw badRequest(`${header} must list header names, e.g. ["x-custom-id"].`, header, 'invalid_header');
  }
  return (names as string[]).map((n) => n.toLowerCase());
}

function parseBoolean(raw: string | undefined, header: string): boolean {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  throw badRequest(`${header} must be true or false.`, header, 'invalid_header');
}

export function parseGatewayOptions(headers: Record<string, string>): GatewayOptions {
  return {
    metadata: parseMetadata(headers['x-gateway-metadata']),
    timeoutMs: parseTimeout(headers['x-gateway-request-timeout']),
    forwardHeaders: parseHeaderList(headers['x-gateway-forward-headers'], 'x-gateway-forward-headers'),
    cacheForceRefresh: parseBoolean(headers['x-gateway-cache-force-refresh'], 'x-gateway-cache-force-refresh'),
    cacheNamespace: headers['x-gateway-cache-namespace'] || undefined,
  };
}

/** Headers never sent upstream: hop-by-hop, the gateway's own, and edge/proxy headers. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'trailers',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'accept-encoding',
  'via',
  'forwarded',
]);

export function isForwardableRequestHeader(name: string): boolean {
  return (
    !HOP_BY_HOP.has(name) &&
    !name.startsWith('x-gateway-') &&
    !name.startsWith('x-forwarded-') &&
    !name.startsWith('x-amzn-') &&
    !name.startsWith('x-amz-cf-') &&
    !name.startsWith('cloudfront-') &&
    name !== 'authorization' &&
    name !== 'x-api-key' &&
    name !== 'api-key' &&
    name !== 'x-goog-api-key'
  );
}

/** Response headers from a provider, minus hop-by-hop ones (the body is re-framed). */
export function responseHeadersFrom(upstream: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(upstream)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    if (name === 'set-cookie') continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/**
 * `_user` is the end user a request is made for. When the metadata does not name one, the
 * OpenAI body's own end-user field `user` does (as OpenAI-style clients already send it).
 */
export function withEndUser(metadata: Record<string, string>, body: unknown): Record<string, string> {
  if (metadata._user !== undefined || !body || typeof body !== 'object') return metadata;
  const user = (body as { user?: unknown }).user;
  return typeof user === 'string' && user !== '' && user.length <= MAX_WELL_KNOWN_METADATA_CHARS ? { ...metadata, _user: user } : metadata;
}
