/**
 * The `mcp` tools of a Responses request (`tools: [{type: "mcp", ...}]`), checked and
 * resolved to the servers the gateway will talk to: a stored server (`server`: its slug, a
 * gateway extension) or one named by `server_url` with the request's `headers`.
 */
import { config } from '../../shared/config';
import { badRequest } from '../../shared/errors';
import { assertSafeUrl } from '../../shared/net/ssrf';
import { parseInput, z } from '../../shared/validation';
import { DEFAULT_MCP_TIMEOUT_MS } from '../admin-routes';
import { resolveMcpServer, type McpServerWithSecrets } from '../store';
import { adHocMcpServer } from '../upstream';

const toolFilterSchema = z.looseObject({ tool_names: z.optional(z.array(z.string())), read_only: z.optional(z.boolean()) });

export const mcpToolSchema = z.looseObject({
  type: z.literal('mcp'),
  server_label: z.string().check(z.regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, `_` or `-`')),
  server_url: z.optional(z.string()),
  /** Gateway extension: the slug of a server registered with /v1/mcp-servers. */
  server: z.optional(z.string()),
  connector_id: z.optional(z.string()),
  headers: z.optional(z.nullable(z.record(z.string(), z.string()))),
  authorization: z.optional(z.string()),
  server_description: z.optional(z.string()),
  allowed_tools: z.optional(z.nullable(z.union([z.array(z.string()), toolFilterSchema]))),
  require_approval: z.optional(
    z.nullable(z.union([z.enum(['always', 'never']), z.looseObject({ always: z.optional(toolFilterSchema), never: z.optional(toolFilterSchema) })])),
  ),
});
export type McpToolParam = z.infer<typeof mcpToolSchema>;

/** `always`, `never`, or the tools named on each side (a tool named on neither needs approval, as on OpenAI). */
export type ApprovalRule = 'always' | 'never' | { always: string[]; never: string[] };

export interface McpToolSpec {
  /** Its position in the request's `tools`, for errors. */
  index: number;
  label: string;
  server: McpServerWithSecrets;
  /** Tool names the model may use; null: every tool the server lists (and its stored allowed_tools allows). */
  allowedTools: string[] | null;
  approval: ApprovalRule;
}

export function needsApproval(spec: McpToolSpec, tool: string): boolean {
  const rule = spec.approval;
  if (rule === 'always' || rule === 'never') return rule === 'always';
  if (rule.never.includes(tool)) return false;
  return true;
}

function allowedOf(param: McpToolParam['allowed_tools'], stored: string[] | null): string[] | null {
  const asked = Array.isArray(param) ? param : (param?.tool_names ?? null);
  if (asked === null) return stored;
  return stored === null ? asked : asked.filter((name) => stored.includes(name));
}

function approvalOf(param: McpToolParam['require_approval']): ApprovalRule {
  // OpenAI asks for approval unless told otherwise.
  if (param === undefined || param === null) return 'always';
  if (typeof param === 'string') return param;
  return { always: param.always?.tool_names ?? [], never: param.never?.tool_names ?? [] };
}

/** The request's MCP tools, resolved (a 400 naming the field for an unknown slug, a blocked URL or a bad entry). */
/** `field`: where the tools are in the request, for errors (`tools`; the Messages API's `mcp_servers`, translated). */
export async function resolveMcpTools(workspaceId: string, tools: readonly unknown[], field = 'tools'): Promise<McpToolSpec[]> {
  const specs: McpToolSpec[] = [];
  for (const [index, raw] of tools.entries()) {
    if ((raw as { type?: unknown } | null)?.type !== 'mcp') continue;
    const where = `${field}[${index}]`;
    const tool = parseInput(mcpToolSchema, raw, where);
    if (tool.connector_id !== undefined) {
      throw badRequest(
        'OpenAI service connectors (`connector_id`) are not available through the gateway: give `server_url` or a stored `server`.',
        `${where}.connector_id`,
        'unsupported_value',
      );
    }
    if ((tool.server_url === undefined) === (tool.server === undefined)) {
      throw badRequest('An mcp tool needs exactly one of `server_url` and `server` (the slug of a stored MCP server).', `${where}.server_url`, 'invalid_value');
    }
    if (specs.some((s) => s.label === tool.server_label)) {
      throw badRequest(`server_label '${tool.server_label}' is used by two mcp tools.`, `${where}.server_label`, 'invalid_value');
    }
    let server: McpServerWithSecrets;
    if (tool.server !== undefined) {
      const stored = await resolveMcpServer(workspaceId, tool.server);
      if (!stored) throw badRequest(`No MCP server '${tool.server}' in this workspace (see /v1/mcp-servers).`, `${where}.server`, 'mcp_server_not_found');
      server = stored;
    } else {
      const url = assertSafeUrl(tool.server_url!, { trustedHosts: config().trustedHosts, param: `${where}.server_url` }).toString();
      const headers = { ...(tool.headers ?? {}) };
      if (tool.authorization) headers.authorization = `Bearer ${tool.authorization}`;
      server = adHocMcpServer(workspaceId, tool.server_label, url, headers, DEFAULT_MCP_TIMEOUT_MS);
    }
    specs.push({
      index,
      label: tool.server_label,
      server,
      allowedTools: allowedOf(tool.allowed_tools, server.allowed_tools),
      approval: approvalOf(tool.require_approval),
    });
  }
  return specs;
}
