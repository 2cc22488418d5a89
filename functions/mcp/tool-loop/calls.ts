import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { CallerRequest } from '../../shared/http/types';
import { governedToolCall } from '../governed-call';
import type { McpServerWithSecrets } from '../store';
import { withUpstream } from '../upstream';

/** How many pages of tools are read from one server. */
const MAX_TOOL_PAGES = 10;

/** What a tool call runs on behalf of: the caller's request (key, workspace, trace, context). */
export interface McpCallContext {
  req: CallerRequest;
}

/** Every tool the server lists (up to MAX_TOOL_PAGES pages); throws an McpError naming the server. */
export async function listMcpTools(server: McpServerWithSecrets): Promise<Tool[]> {
  return withUpstream(server, async (client) => {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const result = await client.listTools(cursor ? { cursor } : undefined, { timeout: server.timeout_ms });
      tools.push(...result.tools);
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    return tools;
  });
}

/**
 * One tool call, the only place the tool loop calls a server, governed like every tool call
 * (functions/mcp/governed-call.ts): the key's allow-list, tool_calls rate limits, guardrails
 * on the arguments and the result, a request-log record under the request's trace id. The
 * tool's result as the server gave it (`isError` included), or an McpError naming the
 * server or the rule (refused, unreachable, timeout, answer over the size cap).
 */
export function callMcpTool(ctx: McpCallContext, server: McpServerWithSecrets, tool: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return governedToolCall({ req: ctx.req, server, tool, arguments: args });
}

/** A tool result as the text the model and the `mcp_call` item get: text parts joined, other parts as JSON. */
export function resultText(result: CallToolResult): string {
  const parts = (result.content ?? []).map((part) => (part.type === 'text' ? part.text : JSON.stringify(part)));
  if (!parts.length && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return parts.join('\n');
}
