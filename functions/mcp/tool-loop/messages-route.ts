/**
 * `POST /v1/messages` with `mcp_servers` (Anthropic's MCP connector) the gateway runs itself:
 * on a provider other than Anthropic, or naming a stored server (`server`, a gateway
 * extension) which Anthropic cannot reach. Anthropic's own connector gets the rest unchanged.
 * The tool loop, and with it the MCP SDK, loads only when a request needs it.
 */
import { allAnthropic, messages as messagesRoute, reachable } from '../../gateway/messages';
import type { GatewayRequest, HttpResponse } from '../../shared/http/types';

async function gatewayRunsMcpServers(req: GatewayRequest): Promise<boolean> {
  let servers: unknown;
  try {
    servers = (req.json() as { mcp_servers?: unknown } | null)?.mcp_servers;
  } catch {
    return false;
  }
  if (!Array.isArray(servers) || !servers.length) return false;
  if (servers.some((s) => (s as { server?: unknown } | null)?.server !== undefined)) return true;
  try {
    const { providers, guarded } = await reachable(req);
    return !allAnthropic(providers) || guarded;
  } catch {
    // The route answers the same failure in Anthropic's shape.
    return false;
  }
}

export async function messages(req: GatewayRequest): Promise<HttpResponse> {
  if (!(await gatewayRunsMcpServers(req))) return messagesRoute(req);
  const { mcpMessages } = await import('./messages-run');
  return mcpMessages(req);
}
