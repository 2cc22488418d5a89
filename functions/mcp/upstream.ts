import { Readable, Transform } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { GatewayError } from '../shared/errors';
import { readBody, sendUpstream } from '../shared/net/http-client';
import type { UpstreamRequest } from '../shared/net/upstream-request';
import type { McpServerWithSecrets } from './store';

/**
 * The gateway as an MCP client of a registered server: the SDK's Client over its
 * StreamableHTTPClientTransport (or its SSEClientTransport for servers that only speak the
 * older HTTP+SSE transport), whose `fetch` is the gateway's own outbound client (SSRF
 * guard and GATEWAY_TRUSTED_HOSTS on every connection, no redirects followed, the server's
 * `timeout_ms` on every exchange) and whose answers are cut at MAX_MCP_RESPONSE_BYTES.
 */

/** How many exchanges (each bounded by timeout_ms) an HTTP+SSE connection's event stream is given time for. */
const SSE_EXCHANGES_PER_CONNECTION = 3;

/** The largest answer (one HTTP response body) taken from an MCP server; more is refused, not buffered. */
export const MAX_MCP_RESPONSE_BYTES = 4 * 1024 * 1024;
const MAX_TOKEN_RESPONSE_BYTES = 64 * 1024;
/** A cached OAuth token is renewed this long before it expires. */
const TOKEN_EXPIRY_MARGIN_MS = 30_000;

const gatewayClientInfo = { name: 'ai-gateway', version: '1.0.0' };

function headerRecord(headers: RequestInit['headers']): Record<string, string> {
  return Object.fromEntries(new Headers(headers).entries());
}

/** A byte counter that fails the stream past `limit` and tells `onOverflow`. */
function capped(limit: number, onOverflow: () => void): Transform {
  let size = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length;
      if (size > limit) {
        onOverflow();
        return done(new Error(`the MCP server's answer exceeds ${limit} bytes`));
      }
      done(null, chunk);
    },
  });
}

function gatewayFetch(server: McpServerWithSecrets, extraHeaders: Record<string, string>, options: ConnectOptions, onOverflow: () => void): FetchLike {
  return async (url, init) => {
    const method = (init?.method ?? 'GET').toUpperCase() as UpstreamRequest['method'];
    const body = typeof init?.body === 'string' ? init.body : undefined;
    // GET is the server's event stream: quiet for long stretches when it is kept open.
    const timeoutMs = method === 'GET' && options.streamTimeoutMs ? options.streamTimeoutMs : server.timeout_ms;
    const res = await sendUpstream({
      url: url.toString(),
      method,
      headers: { ...headerRecord(init?.headers), ...extraHeaders },
      body,
      signal: init?.signal ?? undefined,
      timeoutMs,
      idleTimeoutMs: timeoutMs,
      param: 'url',
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(res.headers)) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    const noBody = res.status === 204 || res.status === 304;
    if (noBody) res.body.resume();
    const stream = noBody ? null : (Readable.toWeb(res.body.pipe(capped(MAX_MCP_RESPONSE_BYTES, onOverflow))) as ReadableStream<Uint8Array>);
    return new Response(stream, { status: res.status, headers });
  };
}

// ---- OAuth 2.1 client credentials ------------------------------------------------------

const tokens = new Map<string, { token: string; expiresAt: number }>();

/** An access token for the server, from the cache or its token endpoint (client_secret_post). */
async function clientCredentialsToken(server: McpServerWithSecrets): Promise<string> {
  if (server.auth.type !== 'oauth_client_credentials') throw new Error('not an OAuth server');
  const { token_url, client_id, scope } = server.auth;
  const key = `${server.workspace_id}#${server.slug}#${server.version}`;
  const cached = tokens.get(key);
  if (cached && cached.expiresAt > Date.now()) return cached.token;
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id, client_secret: server.secrets.client_secret ?? '' });
  if (scope) form.set('scope', scope);
  const res = await sendUpstream({
    url: token_url,
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: form.toString(),
    timeoutMs: server.timeout_ms,
    param: 'auth.token_url',
  });
  const text = (await readBody(res.body, MAX_TOKEN_RESPONSE_BYTES)).toString('utf8');
  let parsed: { access_token?: unknown; expires_in?: unknown } = {};
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    /* reported below */
  }
  if (res.status !== 200 || typeof parsed.access_token !== 'string') {
    throw new McpError(ErrorCode.InternalError, `MCP server '${server.slug}': its token endpoint refused the client credentials (HTTP ${res.status}).`);
  }
  const lifetimeMs = typeof parsed.expires_in === 'number' ? parsed.expires_in * 1000 : 3_600_000;
  tokens.set(key, { token: parsed.access_token, expiresAt: Date.now() + Math.max(0, lifetimeMs - TOKEN_EXPIRY_MARGIN_MS) });
  return parsed.access_token;
}

async function authHeaders(server: McpServerWithSecrets): Promise<Record<string, string>> {
  if (server.auth.type === 'headers') return { ...server.secrets.headers };
  if (server.auth.type === 'oauth_client_credentials') return { authorization: `Bearer ${await clientCredentialsToken(server)}` };
  return {};
}

/**
 * A server named by URL in a request (the Responses API's `server_url`) rather than stored:
 * the same client path (SSRF guard, timeout, answer cap), with the request's headers sent
 * as given. `label` names it in errors.
 */
export function adHocMcpServer(workspaceId: string, label: string, url: string, headers: Record<string, string>, timeoutMs: number): McpServerWithSecrets {
  const now = Math.floor(Date.now() / 1000);
  return {
    id: `adhoc:${label}`,
    slug: label,
    workspace_id: workspaceId,
    url,
    description: null,
    allowed_tools: null,
    timeout_ms: timeoutMs,
    auth: { type: 'headers', header_names: Object.keys(headers) },
    secrets: { headers },
    version: 0,
    created_at: now,
    updated_at: now,
  };
}

// ---- errors ------------------------------------------------------------------------------

/** A JSON-RPC error naming the server, for whatever went wrong talking to it. */
export function upstreamFailure(server: McpServerWithSecrets, err: unknown, overflowed: boolean): McpError {
  const name = `MCP server '${server.slug}'`;
  if (overflowed) {
    return new McpError(ErrorCode.InternalError, `${name} answered more than ${MAX_MCP_RESPONSE_BYTES} bytes; the gateway refuses larger results.`);
  }
  if (err instanceof McpError) {
    if (err.code === ErrorCode.RequestTimeout) return new McpError(ErrorCode.RequestTimeout, `${name} did not answer within ${server.timeout_ms} ms.`);
    const message = err.message.replace(/^MCP error -?\d+: /, '');
    return new McpError(err.code, `${name}: ${message}`, err.data);
  }
  if (err instanceof GatewayError) {
    if (err.status === 408 || err.status === 504) return new McpError(ErrorCode.RequestTimeout, `${name} did not answer within ${server.timeout_ms} ms.`);
    return new McpError(ErrorCode.InternalError, `${name} is not reachable: ${err.message}`);
  }
  const message = err instanceof Error ? err.message : String(err);
  return new McpError(ErrorCode.InternalError, `${name} is not reachable or answered malformed JSON-RPC: ${message}`);
}

export interface UpstreamConnection {
  client: Client;
  /** Whether an answer went over MAX_MCP_RESPONSE_BYTES (the connection is then closed). */
  overflowed(): boolean;
}

export interface ConnectOptions {
  /**
   * The limit on the server's own event stream (GET), for a connection kept open to relay
   * its notifications; without it, that stream has the server's `timeout_ms` like every
   * other exchange.
   */
  streamTimeoutMs?: number;
}

type TransportKind = 'streamable_http' | 'sse';

/**
 * The transport each server speaks, once a connection found out (per container). A server
 * that answers Streamable HTTP's first POST with one of FALLBACK_STATUSES is tried with the
 * older HTTP+SSE transport (2024-11-05), as the SDK's documentation describes.
 */
const transportOf = new Map<string, TransportKind>();
const FALLBACK_STATUSES = new Set([400, 404, 405]);

class ConnectFailure extends Error {
  constructor(
    readonly reason: unknown,
    readonly overflowed: boolean,
  ) {
    super('connect failed');
  }
}

async function connectWith(server: McpServerWithSecrets, kind: TransportKind, headers: Record<string, string>, options: ConnectOptions) {
  let overflowed = false;
  const client = new Client(gatewayClientInfo);
  // Over HTTP+SSE every answer comes on the one event stream (GET) of the connection: it
  // lives for the connection's exchanges (connect, list, call), each bounded by timeout_ms.
  const streamTimeoutMs = options.streamTimeoutMs ?? (kind === 'sse' ? SSE_EXCHANGES_PER_CONNECTION * server.timeout_ms : undefined);
  const fetch = gatewayFetch(server, headers, { streamTimeoutMs }, () => {
    overflowed = true;
    // Pending requests would otherwise wait for their timeout.
    void client.close();
  });
  const url = new URL(server.url);
  // The SSE transport refuses a POST endpoint the server announces on another origin; every
  // request goes through gatewayFetch (SSRF rules, no redirects).
  const transport = kind === 'sse' ? new SSEClientTransport(url, { fetch }) : new StreamableHTTPClientTransport(url, { fetch });
  try {
    await client.connect(transport, { timeout: server.timeout_ms });
    return { client, overflowed: () => overflowed };
  } catch (err) {
    await client.close().catch(() => undefined);
    throw new ConnectFailure(err, overflowed);
  }
}

/** A connected client of the server; the caller closes it. Failures are JSON-RPC errors naming the server. */
export async function connectUpstream(server: McpServerWithSecrets, options: ConnectOptions = {}): Promise<UpstreamConnection> {
  const cacheKey = `${server.workspace_id}#${server.slug}#${server.version}`;
  let headers: Record<string, string>;
  try {
    headers = await authHeaders(server);
  } catch (err) {
    throw upstreamFailure(server, err, false);
  }
  const known = transportOf.get(cacheKey);
  try {
    const connection = await connectWith(server, known ?? 'streamable_http', headers, options);
    transportOf.set(cacheKey, known ?? 'streamable_http');
    return connection;
  } catch (failure) {
    const { reason: cause, overflowed } = failure as ConnectFailure;
    if (known || !(cause instanceof StreamableHTTPError) || !FALLBACK_STATUSES.has(cause.code ?? 0)) throw upstreamFailure(server, cause, overflowed);
  }
  try {
    const connection = await connectWith(server, 'sse', headers, options);
    transportOf.set(cacheKey, 'sse');
    return connection;
  } catch (failure) {
    const { reason: cause, overflowed } = failure as ConnectFailure;
    throw upstreamFailure(server, cause, overflowed);
  }
}

/**
 * Run `work` against a connected client of the server, then close it. Every failure
 * (connect, timeout, oversize, malformed answer) becomes a JSON-RPC error naming the server.
 */
export async function withUpstream<T>(server: McpServerWithSecrets, work: (client: Client) => Promise<T>): Promise<T> {
  const { client, overflowed } = await connectUpstream(server);
  try {
    return await work(client);
  } catch (err) {
    throw upstreamFailure(server, err, overflowed());
  } finally {
    await client.close().catch(() => undefined);
  }
}
