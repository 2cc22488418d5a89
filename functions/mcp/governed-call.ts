import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { AuthContext, CallerRequest } from '../shared/http/types';
import { log } from '../shared/telemetry/logger';
import type { McpServerWithSecrets } from './store';
import { withUpstream } from './upstream';

/**
 * One governed MCP tool call, the way every caller runs one (`/v1/mcp`, `/v1/mcp/{slug}`,
 * the server-side MCP tools of the model APIs): check the allow-lists -> call the server.
 */

export interface ToolCall {
  /** The request the call belongs to: its key, headers and trace. */
  req: CallerRequest;
  server: McpServerWithSecrets;
  /** The tool's name on its server (without the `<slug>__` prefix). */
  tool: string;
  arguments?: Record<string, unknown>;
}

/** The key's allow-list entry for the server: undefined when the key may not use it. */
function allowanceOf(auth: AuthContext, slug: string) {
  return auth.allowedMcp === undefined ? { server: slug, tools: null } : auth.allowedMcp.find((a) => a.server === slug);
}

/** Whether the key may use the server at all (list its tools, read its resources and prompts). */
export function mayUseServer(auth: AuthContext, server: McpServerWithSecrets): boolean {
  return allowanceOf(auth, server.slug) !== undefined;
}

/** The refusal of a server outside the key's allow-list. */
export const serverRefusal = (server: McpServerWithSecrets): McpError =>
  new McpError(ErrorCode.InvalidParams, `This API key may not use MCP server '${server.slug}': it is not in the key's allowed_mcp.`, { rule: 'allowed_mcp' });

/** Why the key may not call the tool (the rule, named), or undefined when it may. */
export function refusalOf(auth: AuthContext, server: McpServerWithSecrets, tool: string): McpError | undefined {
  if (server.allowed_tools !== null && !server.allowed_tools.includes(tool)) {
    return new McpError(ErrorCode.InvalidParams, `Tool '${tool}' of MCP server '${server.slug}' is not in its allowed_tools.`, { rule: 'allowed_tools' });
  }
  const allowance = allowanceOf(auth, server.slug);
  if (!allowance) return serverRefusal(server);
  if (allowance.tools && !allowance.tools.includes(tool)) {
    return new McpError(
      ErrorCode.InvalidParams,
      `This API key may not call tool '${tool}' of MCP server '${server.slug}': it is not in the key's allowed_mcp tools.`,
      {
        rule: 'allowed_mcp',
      },
    );
  }
  return undefined;
}

/** Whether the key may list and call the tool. */
export const mayCall = (auth: AuthContext, server: McpServerWithSecrets, tool: string): boolean => refusalOf(auth, server, tool) === undefined;

/** Run one tool call under the key's allow-lists; every refusal and failure is a JSON-RPC error naming its cause. */
export async function governedToolCall(call: ToolCall): Promise<CallToolResult> {
  const { req, server, tool } = call;
  const refused = refusalOf(req.auth, server, tool);
  if (refused) throw refused;
  const started = Date.now();
  try {
    const result = (await withUpstream(server, (client) =>
      client.callTool({ name: tool, arguments: call.arguments }, undefined, { timeout: server.timeout_ms }),
    )) as CallToolResult;
    log.info('mcp tool call', { server: server.slug, tool, is_error: result.isError === true, latency_ms: Date.now() - started }, req.context);
    return result;
  } catch (err) {
    log.warn('mcp tool call failed', { server: server.slug, tool, latency_ms: Date.now() - started, error: (err as Error).message }, req.context);
    throw err;
  }
}
