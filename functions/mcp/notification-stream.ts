import { PassThrough, Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { GatewayRequest, HttpResponse } from '../shared/http/types';
import { log } from '../shared/telemetry/logger';
import { jsonRpcErrorResponse } from './session-gate';
import type { McpSession } from './sessions';
import type { McpServerWithSecrets } from './store';
import { connectUpstream, type UpstreamConnection } from './upstream';

/**
 * `GET /v1/mcp/{slug}` with a session: a server-sent event stream of the registered server's
 * notifications (tools/resources/prompts list_changed, resources/updated, log messages,
 * ...). The gateway connects to the server as a client, which opens the server's own event
 * stream, and relays each notification through an SDK server on a stateless transport
 * (which writes the SSE frames and keep-alive comments). The stream is bounded: it ends
 * after STREAM_LIFETIME_MS (the client reconnects), when the connection to the server is
 * closed (an answer over the size cap), and when the caller leaves (the upstream
 * connection is closed at once).
 */

export const STREAM_LIFETIME_MS = 5 * 60_000;

const SERVER_INFO = { name: 'ai-gateway', version: '1.0.0' };

/** Everything a relayed notification may need declared (the SDK's server checks before sending). */
const RELAY_CAPABILITIES = {
  tools: { listChanged: true },
  resources: { listChanged: true, subscribe: true },
  prompts: { listChanged: true },
  logging: {},
};

export async function openNotificationStream(req: GatewayRequest, target: McpServerWithSecrets, session: McpSession): Promise<HttpResponse> {
  const relay = new Server({ ...SERVER_INFO, name: `ai-gateway/${target.slug}` }, { capabilities: RELAY_CAPABILITIES });
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  await relay.connect(transport);
  const headers = new Headers({ accept: req.headers.accept ?? '' });
  const answer = await transport.handleRequest(new Request(`http://gateway${req.path}`, { method: 'GET', headers }));
  if (answer.status !== 200 || !answer.body) {
    await relay.close();
    return { statusCode: answer.status, headers: Object.fromEntries(answer.headers.entries()), body: Buffer.from(await answer.arrayBuffer()) };
  }

  let upstream: UpstreamConnection;
  try {
    upstream = await connectUpstream(target, { streamTimeoutMs: STREAM_LIFETIME_MS });
  } catch (err) {
    await answer.body.cancel().catch(() => undefined);
    await relay.close();
    return jsonRpcErrorResponse(502, -32603, (err as Error).message);
  }

  // The status and headers leave with the first bytes (Lambda response streaming, and the
  // local runtime): an SSE comment sends them now rather than with the first keep-alive.
  const body = new PassThrough();
  body.write(': stream open\n\n');
  const events = Readable.fromWeb(answer.body as NodeReadableStream<Uint8Array>);
  events.on('error', (err) => body.destroy(err));
  events.pipe(body);
  let ended = false;
  const end = (why: string) => {
    if (ended) return;
    ended = true;
    clearTimeout(lifetime);
    log.info('mcp notification stream ended', { server: target.slug, session: session.id, why }, req.context);
    void upstream.client.close().catch(() => undefined);
    // Closing the transport closes the stream's controller: the caller sees the end.
    void relay.close().catch(() => undefined);
  };
  const lifetime = setTimeout(() => end('lifetime'), STREAM_LIFETIME_MS);
  upstream.client.fallbackNotificationHandler = async (notification) => {
    await relay.notification(notification).catch((err: unknown) => {
      log.warn('mcp notification not relayed', { server: target.slug, method: notification.method, error: (err as Error).message }, req.context);
    });
  };
  upstream.client.onclose = () => end('upstream connection closed');
  body.once('close', () => {
    events.destroy();
    end('caller left');
  });

  return {
    statusCode: 200,
    headers: { ...Object.fromEntries(answer.headers.entries()), 'mcp-session-id': session.id },
    body,
  };
}
