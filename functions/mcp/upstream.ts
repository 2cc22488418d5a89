import { Readable, Transform } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { GatewayError } from '../shared/errors';
import { readBody, sendUpstream } from '../shared/net/http-client';
import type { UpstreamRequest } from '../shared/net/upstream-request';
import type { McpServerWithSecrets } from './store';

/**
 * The gateway as an MCP client of a registered server: the SDK's Client over its
 * StreamableHTTPClientTransport, whose `fetch` is the gateway's own outbound client (SSRF
 * guard and GATEWAY_TRUSTED_HOSTS on every connection, no redirects followed, the server's
 * `timeout_ms` on every exchange) and whose answers are cut at MAX_MCP_RESPONSE_BYTES.
 */

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

function gatewayFetch(server: McpServerWithSecrets, extraHeaders: Record<string, string>, onOverflow: () => void): FetchLike {
  return async (url, init) => {
    const method = (init?.method ?? 'GET').toUpperCase() as UpstreamRequest['method'];
    const body = typeof init?.body === 'string' ? init.body : undefined;
    const res = await sendUpstream({
      url: url.toString(),
      method,
      headers: { ...headerRecord(init?.headers), ...extraHeaders },
      body,
      signal: init?.signal ?? undefined,
      timeoutMs: server.timeout_ms,
      idleTimeoutMs: server.timeout_ms,
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

/**
 * Run `work` against a connected client of the server, then close it. Every failure
 * (connect, timeout, oversize, malformed answer) becomes a JSON-RPC error naming the server.
 */
export async function withUpstream<T>(server: McpServerWithSecrets, work: (client: Client) => Promise<T>): Promise<T> {
  let overflowed = false;
  const client = new Client(gatewayClientInfo);
  try {
    const headers = await authHeaders(server);
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
      fetch: gatewayFetch(server, headers, () => {
        overflowed = true;
        // Pending requests would otherwise wait for their timeout.
        void client.close();
      }),
    });
    await client.connect(transport, { timeout: server.timeout_ms });
    return await work(client);
  } catch (err) {
    throw upstreamFailure(server, err, overflowed);
  } finally {
    await client.close().catch(() => undefined);
  }
}
