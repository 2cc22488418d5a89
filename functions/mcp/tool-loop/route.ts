/**
 * `POST /v1/responses` with `mcp` tools the gateway runs itself (on a translated provider,
 * or naming a stored server on OpenAI); any other request goes on to the Responses route
 * unchanged. The tool loop, and with it the MCP SDK, loads only when a request needs it.
 */
import { createResponse as responsesRoute, everyTargetNative } from '../../gateway/openai-responses/route';
import type { GatewayRequest, HttpResponse } from '../../shared/http/types';

const mcpToolsOf = (body: unknown): Array<Record<string, unknown>> => {
  const tools = (body as { tools?: unknown } | null)?.tools;
  return Array.isArray(tools) ? tools.filter((t) => (t as { type?: unknown } | null)?.type === 'mcp') : [];
};

/**
 * Whether the gateway, not the provider, runs the request's MCP tools: always on a translated
 * provider; on OpenAI itself only when one names a stored server (`server`), which the
 * provider cannot reach. A public `server_url` on OpenAI passes through.
 */
async function gatewayRunsMcp(req: GatewayRequest): Promise<boolean> {
  let body: unknown;
  try {
    body = req.json();
  } catch {
    return false;
  }
  const mcp = mcpToolsOf(body);
  if (!mcp.length) return false;
  return mcp.some((t) => t.server !== undefined) || !(await everyTargetNative(req));
}

export async function createResponse(req: GatewayRequest): Promise<HttpResponse> {
  if (!(await gatewayRunsMcp(req))) return responsesRoute(req);
  const { runMcpResponse } = await import('./run');
  return runMcpResponse(req);
}
