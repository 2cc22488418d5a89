import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import * as z from 'zod';

/**
 * Fake MCP servers built with the SDK's McpServer, served statelessly over Streamable HTTP
 * on 127.0.0.1:
 * - `/tools`: echo (succeeds), weather (takes a `location`), fail (isError), stall (never answers), large (a big text),
 *   hidden (for allowed_tools), a resource and a prompt;
 * - `/secure`: whoami, only with `x-api-token: <token>`;
 * - `/oauth`: whoami, only with the bearer token `/token` hands out for client credentials.
 */
export interface FakeMcp {
  url: string;
  headerToken: string;
  oauth: { clientId: string; clientSecret: string };
  /** How many tokens `/token` has issued. */
  tokensIssued(): number;
  /** Size of the `large` tool's text. */
  largeBytes: number;
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
    close: async () => {
      for (const release of stalls) release();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
