import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';

/**
 * Fake MCP servers built with the SDK's McpServer, served statelessly over Streamable HTTP
 * on 127.0.0.1:
 * - `/tools`: echo (succeeds), weather (takes a `location`), fail (isError), stall (never answers), large (a big text),
 *   hidden (for allowed_tools), a resource and a prompt;
 * - `/secure`: whoami, only with `x-api-token: <token>`;
 * - `/oauth`: whoami, only with the bearer token `/token` hands out for client credentials;
 * - `/live`: stateful (sessions, each with its event stream): `announce` sends every session
 *   tools/list_changed, resources/updated and a log message; `slow` reports progress three
 *   times before it answers;
 * - `/legacy`: the older HTTP+SSE transport (2024-11-05) only, with the SDK's
 *   SSEServerTransport (GET `/legacy` is the event stream, POST `/legacy/messages` takes
 *   messages; a POST to `/legacy` is 405): echo;
 * - `/legacy-elsewhere`: an HTTP+SSE event stream that announces a POST endpoint on another
 *   origin (`elsewhereUrl`, which counts what reaches it).
 */
export interface FakeMcp {
  url: string;
  headerToken: string;
  oauth: { clientId: string; clientSecret: string };
  /** How many tokens `/token` has issued. */
  tokensIssued(): number;
  /** Size of the `large` tool's text. */
  largeBytes: number;
  /** How many event streams (GET) of `/live` are open. */
  liveStreams(): number;
  /** Another origin, and how many requests reached it. */
  elsewhereUrl: string;
  elsewhereHits(): number;
  close(): Promise<void>;
}

function toolsServer(largeBytes: number, stalls: Set<() => void>): McpServer {
  const server = new McpServer({ name: 'fake-tools', version: '1.0.0' });
  server.registerTool('echo', { description: 'Echo the text', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text: `echo: ${text}` }],
  }));
  server.registerTool('weather', { description: 'Weather for a city', inputSchema: { location: z.string() } }, async ({ location }) => ({
    content: [{ type: 'text', text: `sunny in ${location}` }],
  }));
  server.registerTool('fail', { description: 'Always fails' }, async () => ({ content: [{ type: 'text', text: 'the tool failed' }], isError: true }));
  server.registerTool(
    'stall',
    { description: 'Never answers' },
    () =>
      new Promise((resolve) => {
        const release = () => resolve({ content: [{ type: 'text', text: 'late' }] });
        stalls.add(release);
      }),
  );
  server.registerTool('large', { description: 'A large result' }, async () => ({ content: [{ type: 'text', text: 'x'.repeat(largeBytes) }] }));
  server.registerTool('hidden', { description: 'Not allowed through the gateway' }, async () => ({ content: [{ type: 'text', text: 'secret' }] }));
  server.registerResource('readme', 'fake://readme', { description: 'A resource', mimeType: 'text/plain' }, async (uri) => ({
    contents: [{ uri: uri.href, text: 'read me' }],
  }));
  server.registerPrompt('greet', { description: 'A prompt', argsSchema: { name: z.string() } }, ({ name }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `Hello ${name}` } }],
  }));
  return server;
}

function whoamiServer(name: string): McpServer {
  const server = new McpServer({ name, version: '1.0.0' });
  server.registerTool('whoami', { description: 'Who answers' }, async () => ({ content: [{ type: 'text', text: `${name} ok` }] }));
  return server;
}

function liveServer(sessions: Map<string, { server: McpServer }>): McpServer {
  const server = new McpServer({ name: 'fake-live', version: '1.0.0' }, { capabilities: { logging: {} } });
  server.registerTool('announce', { description: 'Notify every session' }, async () => {
    for (const { server: s } of sessions.values()) {
      s.sendToolListChanged();
      await s.server.sendResourceUpdated({ uri: 'fake://live' });
      await s.sendLoggingMessage({ level: 'info', data: 'announced' });
    }
    return { content: [{ type: 'text', text: `announced to ${sessions.size}` }] };
  });
  server.registerTool('slow', { description: 'Reports progress' }, async (extra) => {
    const progressToken = extra._meta?.progressToken;
    for (let progress = 1; progress <= 3; progress++) {
      if (progressToken !== undefined) {
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress, total: 3, message: `step ${progress}` } });
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return { content: [{ type: 'text', text: 'slow done' }] };
  });
  server.registerResource('live', 'fake://live', { description: 'Changes' }, async (uri) => ({ contents: [{ uri: uri.href, text: 'live' }] }));
  return server;
}

/** The SDK's stateful Streamable HTTP server: one transport and server per session. */
async function serveLive(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  sessions: Map<string, { server: McpServer; transport: StreamableHTTPServerTransport }>,
  streams: { open: number },
): Promise<void> {
  const id = req.headers['mcp-session-id'] as string | undefined;
  const body = req.method === 'POST' ? (JSON.parse(await readRaw(req)) as unknown) : undefined;
  let session = id ? sessions.get(id) : undefined;
  if (!session && !id && isInitializeRequest(body)) {
    const server = liveServer(sessions);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (newId) => void sessions.set(newId, { server, transport }),
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    session = { server, transport };
  }
  if (!session) {
    res.writeHead(id ? 404 : 400, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","error":{"code":-32000,"message":"no session"},"id":null}');
    return;
  }
  if (req.method === 'GET') {
    streams.open++;
    res.once('close', () => streams.open--);
  }
  await session.transport.handleRequest(req, res, body);
}

function legacyServer(): McpServer {
  const server = new McpServer({ name: 'fake-legacy', version: '1.0.0' });
  server.registerTool('echo', { description: 'Echo the text', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text: `legacy echo: ${text}` }],
  }));
  return server;
}

/** HTTP+SSE (2024-11-05): true when it took the request. */
async function serveLegacy(req: http.IncomingMessage, res: http.ServerResponse, path: string, legacy: Map<string, SSEServerTransport>, elsewhere: string) {
  if (path === '/legacy' && req.method === 'GET') {
    const transport = new SSEServerTransport('/legacy/messages', res);
    legacy.set(transport.sessionId, transport);
    res.once('close', () => legacy.delete(transport.sessionId));
    await legacyServer().connect(transport);
    return true;
  }
  if (path === '/legacy/messages' && req.method === 'POST') {
    const id = new URL(req.url ?? '', 'http://x').searchParams.get('sessionId') ?? '';
    const transport = legacy.get(id);
    if (!transport) res.writeHead(404).end('unknown session');
    else await transport.handlePostMessage(req, res, JSON.parse(await readRaw(req)));
    return true;
  }
  if (path === '/legacy' || path === '/legacy-elsewhere') {
    if (req.method !== 'GET') {
      res.writeHead(405, { allow: 'GET' }).end();
      return true;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`event: endpoint\ndata: ${elsewhere}/messages\n\n`);
    return true;
  }
  return false;
}

async function readRaw(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startFakeMcp(largeBytes = 5 * 1024 * 1024): Promise<FakeMcp> {
  const headerToken = 'fake-header-token';
  const oauth = { clientId: 'gateway-client', clientSecret: 'gateway-client-secret' };
  const accessToken = 'fake-access-token';
  let issued = 0;
  const stalls = new Set<() => void>();
  const liveSessions = new Map<string, { server: McpServer; transport: StreamableHTTPServerTransport }>();
  const streams = { open: 0 };
  const legacy = new Map<string, SSEServerTransport>();
  let elsewhereHits = 0;
  const elsewhere = http.createServer((_req, res) => {
    elsewhereHits++;
    res.writeHead(500).end();
  });
  await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
  const elsewhereUrl = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}`;

  const server = http.createServer(async (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/token') {
      const form = new URLSearchParams(await readRaw(req));
      if (form.get('grant_type') !== 'client_credentials' || form.get('client_id') !== oauth.clientId || form.get('client_secret') !== oauth.clientSecret) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_client"}');
        return;
      }
      issued++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: accessToken, token_type: 'Bearer', expires_in: 3600 }));
      return;
    }
    if (await serveLegacy(req, res, path ?? '', legacy, elsewhereUrl)) return;
    if (path === '/live') {
      await serveLive(req, res, liveSessions, streams);
      return;
    }
    let mcp: McpServer | undefined;
    if (path === '/tools') mcp = toolsServer(largeBytes, stalls);
    if (path === '/secure' && req.headers['x-api-token'] === headerToken) mcp = whoamiServer('secure');
    if (path === '/oauth' && req.headers.authorization === `Bearer ${accessToken}`) mcp = whoamiServer('oauth');
    if (!mcp) {
      res.writeHead(path === '/secure' || path === '/oauth' ? 401 : 404, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    headerToken,
    oauth,
    largeBytes,
    tokensIssued: () => issued,
    liveStreams: () => streams.open,
    elsewhereUrl,
    elsewhereHits: () => elsewhereHits,
    close: async () => {
      for (const release of stalls) release();
      for (const { transport } of liveSessions.values()) await transport.close();
      server.closeAllConnections();
      elsewhere.closeAllConnections();
      await new Promise<void>((resolve) => elsewhere.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
