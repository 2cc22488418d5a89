import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { notFound } from '../shared/errors';
import type { GatewayRequest, HttpResponse } from '../shared/http/types';
import { log } from '../shared/telemetry/logger';
import { allMcpServers, resolveMcpServer, type McpServerWithSecrets } from './store';
import { governedToolCall, mayCall, mayUseServer, serverRefusal, toolCallHeaders } from './governed-call';
import { withUpstream } from './upstream';

/**
 * `/v1/mcp` and `/v1/mcp/{slug}`: the gateway as an MCP server over Streamable HTTP, run
 * with the SDK's web-standard transport in stateless mode: a fresh Server and transport per
 * HTTP request, so any container answers any request and nothing is kept between them
 * (docs/mcp.md says why). Loaded lazily by routes.ts: the SDK stays out of the cold start
 * of the `/v1/mcp-servers` routes.
 */

/** Aggregated tool names are `<slug>__<tool>`; slugs have no `_`, so the first `__` splits. */
export const TOOL_SEPARATOR = '__';
/** How many servers `/v1/mcp` aggregates, and how many tool pages it reads from each. */
const MAX_AGGREGATED_SERVERS = 100;
const MAX_TOOL_PAGES = 10;

const SERVER_INFO = { name: 'ai-gateway', version: '1.0.0' };
/** The request headers the transport reads; the rest (key, hop-by-hop) stay out. */
const FORWARDED_HEADERS = ['content-type', 'accept', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id'];

async function listAllTools(client: Client): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_TOOL_PAGES; page++) {
    const result = await client.listTools(cursor ? { cursor } : undefined);
    tools.push(...result.tools);
    cursor = result.nextCursor;
    if (!cursor) break;
  }
  return tools;
}

/** Every workspace server's tools, each named `<slug>__<tool>`; a server that fails is left out (and logged). */
function aggregateServer(req: GatewayRequest, servers: McpServerWithSecrets[]): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: {} },
    instructions: 'Tools of the MCP servers registered in this gateway workspace, named <server slug>__<tool>.',
  });
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const usable = servers.filter((s) => mayUseServer(req.auth, s));
    const lists = await Promise.all(
      usable.map(async (s) => {
        try {
          const tools = await withUpstream(s, (client) => listAllTools(client));
          return tools.filter((t) => mayCall(req.auth, s, t.name)).map((t) => ({ ...t, name: `${s.slug}${TOOL_SEPARATOR}${t.name}` }));
        } catch (err) {
          log.warn('mcp server left out of the tool list', { server: s.slug, error: (err as Error).message }, req.context);
          return [];
        }
      }),
    );
    return { tools: lists.flat() };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const name = request.params.name;
    const at = name.indexOf(TOOL_SEPARATOR);
    const slug = at > 0 ? name.slice(0, at) : '';
    const target = servers.find((s) => s.slug === slug);
    if (!target) {
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool '${name}': expected <server slug>${TOOL_SEPARATOR}<tool> with a server of this workspace.`);
    }
    return governedToolCall({ req, server: target, tool: name.slice(at + TOOL_SEPARATOR.length), arguments: request.params.arguments });
  });
  return server;
}

/** One registered server as it is: its tools (allowed_tools applied), resources and prompts. */
function passthroughServer(req: GatewayRequest, target: McpServerWithSecrets): Server {
  const server = new Server(
    { ...SERVER_INFO, name: `ai-gateway/${target.slug}` },
    { capabilities: { tools: {}, resources: {}, prompts: {} }, instructions: target.description ?? undefined },
  );
  const upstream = <T>(work: (client: Client) => Promise<T>) =>
    mayUseServer(req.auth, target) ? withUpstream(target, work) : Promise.reject(serverRefusal(target));
  const timeout = { timeout: target.timeout_ms };
  server.setRequestHandler(ListToolsRequestSchema, async (r) => {
    const result = await upstream((c) => c.listTools(r.params, timeout));
    return { ...result, tools: result.tools.filter((t) => mayCall(req.auth, target, t.name)) };
  });
  server.setRequestHandler(CallToolRequestSchema, (r) => governedToolCall({ req, server: target, tool: r.params.name, arguments: r.params.arguments }));
  server.setRequestHandler(ListResourcesRequestSchema, (r) => upstream((c) => c.listResources(r.params, timeout)));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, (r) => upstream((c) => c.listResourceTemplates(r.params, timeout)));
  server.setRequestHandler(ReadResourceRequestSchema, (r) => upstream((c) => c.readResource(r.params, timeout)));
  server.setRequestHandler(ListPromptsRequestSchema, (r) => upstream((c) => c.listPrompts(r.params, timeout)));
  server.setRequestHandler(GetPromptRequestSchema, (r) => upstream((c) => c.getPrompt(r.params, timeout)));
  return server;
}

/**
 * Stateless: no server-initiated stream (GET) and no session to end (DELETE); the spec lets
 * a server answer both with 405, which the SDK's client takes as "POST only".
 */
function methodNotAllowed(): HttpResponse {
  return {
    statusCode: 405,
    headers: { allow: 'POST', 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      error: { code: -32000, message: 'Method not allowed: this MCP endpoint is stateless; send JSON-RPC with POST.' },
      id: null,
    }),
  };
}

/** Hand one HTTP request to a fresh stateless transport and return its answer. */
async function serve(req: GatewayRequest, server: Server): Promise<HttpResponse> {
  if (req.method !== 'POST') return methodNotAllowed();
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    const headers = new Headers();
    for (const name of FORWARDED_HEADERS) if (req.headers[name] !== undefined) headers.set(name, req.headers[name]);
    const request = new Request(`http://gateway${req.path}`, {
      method: req.method,
      headers,
      body: req.method === 'POST' ? new Uint8Array(req.body) : undefined,
    });
    const response = await transport.handleRequest(request);
    const body = Buffer.from(await response.arrayBuffer());
    return { statusCode: response.status, headers: { ...Object.fromEntries(response.headers.entries()), ...toolCallHeaders(req) }, body };
  } finally {
    await server.close();
  }
}

export async function serveAggregate(req: GatewayRequest): Promise<HttpResponse> {
  if (req.method !== 'POST') return methodNotAllowed();
  const servers = await allMcpServers(req.auth.workspaceId, MAX_AGGREGATED_SERVERS);
  return serve(req, aggregateServer(req, servers));
}

export async function serveOne(req: GatewayRequest): Promise<HttpResponse> {
  const slug = req.params.slug!;
  const target = await resolveMcpServer(req.auth.workspaceId, slug);
  if (!target) throw notFound(`No MCP server '${slug.slice(0, 64)}' in this workspace.`, 'slug');
  return serve(req, passthroughServer(req, target));
}
