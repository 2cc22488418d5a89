import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  type CallToolRequest,
  CallToolRequestSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  type Progress,
  ReadResourceRequestSchema,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { notFound } from '../shared/errors';
import type { GatewayRequest, HttpResponse } from '../shared/http/types';
import { log } from '../shared/telemetry/logger';
import { openNotificationStream } from './notification-stream';
import { endSession, gate, jsonRpcErrorResponse, openSession } from './session-gate';
import type { McpSession } from './sessions';
import { allMcpServers, resolveMcpServer, type McpServerWithSecrets } from './store';
import { governedToolCall, mayCall, mayUseServer, serverRefusal, toolCallHeaders } from './governed-call';
import { withUpstream } from './upstream';

/**
 * `/v1/mcp` and `/v1/mcp/{slug}`: the gateway as an MCP server over Streamable HTTP, run
 * with the SDK's web-standard transport in stateless mode: a fresh Server and transport per
 * HTTP request, behind a session check against DynamoDB (session-gate.ts), so any
 * container answers any request of a session (docs/mcp.md says why). Loaded lazily by routes.ts: the SDK stays out of the cold start
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

type ToolCallExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * When the caller asked for progress (a `progressToken`), the server's progress
 * notifications go back to it under the caller's token, on the answer's event stream.
 */
function progressRelay(request: CallToolRequest, extra: ToolCallExtra): ((progress: Progress) => void) | undefined {
  const progressToken = request.params._meta?.progressToken;
  if (progressToken === undefined) return undefined;
  return (progress) => {
    void extra.sendNotification({ method: 'notifications/progress', params: { ...progress, progressToken } }).catch(() => undefined);
  };
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
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const name = request.params.name;
    const at = name.indexOf(TOOL_SEPARATOR);
    const slug = at > 0 ? name.slice(0, at) : '';
    const target = servers.find((s) => s.slug === slug);
    if (!target) {
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool '${name}': expected <server slug>${TOOL_SEPARATOR}<tool> with a server of this workspace.`);
    }
    return governedToolCall({
      req,
      server: target,
      tool: name.slice(at + TOOL_SEPARATOR.length),
      arguments: request.params.arguments,
      onprogress: progressRelay(request, extra),
    });
  });
  return server;
}

/** One registered server as it is: its tools (allowed_tools applied), resources and prompts. */
function passthroughServer(req: GatewayRequest, target: McpServerWithSecrets): Server {
  const server = new Server(
    { ...SERVER_INFO, name: `ai-gateway/${target.slug}` },
    {
      // list_changed notifications of the server are relayed on the session's GET stream.
      capabilities: { tools: { listChanged: true }, resources: { listChanged: true }, prompts: { listChanged: true } },
      instructions: target.description ?? undefined,
    },
  );
  const upstream = <T>(work: (client: Client) => Promise<T>) =>
    mayUseServer(req.auth, target) ? withUpstream(target, work) : Promise.reject(serverRefusal(target));
  const timeout = { timeout: target.timeout_ms };
  server.setRequestHandler(ListToolsRequestSchema, async (r) => {
    const result = await upstream((c) => c.listTools(r.params, timeout));
    return { ...result, tools: result.tools.filter((t) => mayCall(req.auth, target, t.name)) };
  });
  server.setRequestHandler(CallToolRequestSchema, (r, extra) =>
    governedToolCall({ req, server: target, tool: r.params.name, arguments: r.params.arguments, onprogress: progressRelay(r, extra) }),
  );
  server.setRequestHandler(ListResourcesRequestSchema, (r) => upstream((c) => c.listResources(r.params, timeout)));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, (r) => upstream((c) => c.listResourceTemplates(r.params, timeout)));
  server.setRequestHandler(ReadResourceRequestSchema, (r) => upstream((c) => c.readResource(r.params, timeout)));
  server.setRequestHandler(ListPromptsRequestSchema, (r) => upstream((c) => c.listPrompts(r.params, timeout)));
  server.setRequestHandler(GetPromptRequestSchema, (r) => upstream((c) => c.getPrompt(r.params, timeout)));
  return server;
}

/** GET on `/v1/mcp`, where no server-initiated stream is offered: the spec lets a server answer 405, which the SDK's client takes as "no stream". */
function methodNotAllowed(): HttpResponse {
  return jsonRpcErrorResponse(405, -32000, 'Method not allowed: this MCP endpoint offers no server-sent stream; send JSON-RPC with POST.', {
    allow: 'POST, DELETE',
  });
}

/**
 * A tools/call with a progress token, from a caller that accepts SSE, is answered as an
 * event stream (its progress notifications, then the result); everything else as JSON.
 */
function wantsEventStream(req: GatewayRequest): boolean {
  if (!req.headers.accept?.includes('text/event-stream')) return false;
  let message: unknown;
  try {
    message = req.json();
  } catch {
    return false; // the SDK answers the parse error
  }
  const call = message as { method?: unknown; params?: { _meta?: { progressToken?: unknown } } } | null;
  return call?.method === 'tools/call' && call.params?._meta?.progressToken !== undefined;
}

/** Hand one POST to a fresh stateless transport and return its answer: JSON, or an event stream sent as it is written. */
async function answerPost(req: GatewayRequest, server: Server): Promise<HttpResponse> {
  const streamed = wantsEventStream(req);
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !streamed });
  await server.connect(transport);
  let closeLater = false;
  try {
    const headers = new Headers();
    for (const name of FORWARDED_HEADERS) if (req.headers[name] !== undefined) headers.set(name, req.headers[name]);
    const request = new Request(`http://gateway${req.path}`, { method: 'POST', headers, body: new Uint8Array(req.body) });
    const response = await transport.handleRequest(request);
    const responseHeaders = { ...Object.fromEntries(response.headers.entries()), ...toolCallHeaders(req) };
    if (streamed && response.body && response.headers.get('content-type')?.startsWith('text/event-stream')) {
      // The transport ends the stream after the answer; the caller leaving cancels it.
      const body = Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>);
      body.once('close', () => void server.close());
      closeLater = true;
      return { statusCode: response.status, headers: responseHeaders, body };
    }
    return { statusCode: response.status, headers: responseHeaders, body: Buffer.from(await response.arrayBuffer()) };
  } finally {
    if (!closeLater) await server.close();
  }
}

/**
 * The session check (session-gate.ts), then the SDK: a session is validated here against the
 * sessions table and the request answered by a per-request SDK server in stateless mode,
 * because the SDK keeps a session's state in its transport object, which another container
 * (or a later Lambda invocation) does not have.
 */
async function serve(
  req: GatewayRequest,
  endpoint: string,
  server: () => Promise<Server>,
  stream?: (session: McpSession) => Promise<HttpResponse>,
): Promise<HttpResponse> {
  const checked = await gate(req, endpoint);
  if (checked.kind === 'refused') return checked.response;
  if (req.method === 'DELETE' && checked.kind === 'session') return endSession(checked.session);
  if (req.method === 'GET' && checked.kind === 'session') return stream ? stream(checked.session) : methodNotAllowed();
  const answer = await answerPost(req, await server());
  return checked.kind === 'initialize' ? openSession(req, endpoint, checked.clientInfo, answer) : answer;
}

export async function serveAggregate(req: GatewayRequest): Promise<HttpResponse> {
  if (req.method === 'GET') return methodNotAllowed();
  return serve(req, '/v1/mcp', async () => aggregateServer(req, await allMcpServers(req.auth.workspaceId, MAX_AGGREGATED_SERVERS)));
}

export async function serveOne(req: GatewayRequest): Promise<HttpResponse> {
  const slug = req.params.slug!;
  const target = await resolveMcpServer(req.auth.workspaceId, slug);
  if (!target) throw notFound(`No MCP server '${slug.slice(0, 64)}' in this workspace.`, 'slug');
  return serve(
    req,
    `/v1/mcp/${slug}`,
    async () => passthroughServer(req, target),
    (session) => openNotificationStream(req, target, session),
  );
}
