import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { parseGatewayOptions } from '../gateway/headers';
import { openRequestLog } from '../gateway/request-log';
import { resolveConfig } from '../gateway/target';
import type { GuardrailOutcome, HookResult } from '../guardrails/evaluate';
import { enforceRateLimits, refillRateLimitUnits } from '../policies/limiter';
import { GatewayError } from '../shared/errors';
import type { AuthContext, CallerRequest } from '../shared/http/types';
import type { RequestContext } from '../shared/telemetry/context';
import { log } from '../shared/telemetry/logger';
import { writeToolCallMetrics } from '../shared/telemetry/metrics';
import type { RequestFacts } from '../spend/request-record';
import type { McpServerWithSecrets } from './store';
import { withUpstream } from './upstream';

/**
 * One governed MCP tool call, the way every caller runs one (`/v1/mcp`, `/v1/mcp/{slug}`,
 * the server-side MCP tools of the model APIs): check the allow-lists -> count it under the
 * rate-limit policies -> guardrails on its arguments -> call the server -> guardrails on its
 * result -> one request-log record and the server's metrics. Every refusal and failure is a
 * JSON-RPC error (an McpError) naming its cause; docs/mcp.md "Governance" describes them.
 */

export interface ToolCall {
  /** The request the call belongs to: its key, headers (metadata, config) and trace. */
  req: CallerRequest;
  server: McpServerWithSecrets;
  /** The tool's name on its server (without the `<slug>__` prefix). */
  tool: string;
  arguments?: Record<string, unknown>;
  /** The server's progress notifications, when the caller asked for them (a `progressToken`). */
  onprogress?: (progress: Progress) => void;
}

/** JSON-RPC error codes of refusals, in the implementation-defined server-error range. */
export const MCP_RATE_LIMITED = -32029;
export const MCP_GUARDRAIL_BLOCKED = -32046;

/** The request-log route of a tool call. */
export const TOOL_CALL_ROUTE = 'mcp.tools.call';

/** How a call ended, as its log record says: `refused` by an allow-list, a policy or a guardrail. */
export type ToolCallStatus = 'ok' | 'error' | 'refused' | 'timeout';

const loadEvaluator = () => import('../guardrails/evaluate');

/** The `x-ratelimit-*-tool-calls` (and `retry-after`) of a request's tool calls, for its HTTP answer. */
const limitHeaders = new WeakMap<RequestContext, Record<string, string>>();

/**
 * The rate-limit headers the request's tool calls got (the last call's), to add to the
 * HTTP answer where the transport allows, as a model request's answer carries them.
 */
export const toolCallHeaders = (req: CallerRequest): Record<string, string> => limitHeaders.get(req.context) ?? {};

// ---- allow-lists -------------------------------------------------------------------------

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

// ---- refusals of the other steps ------------------------------------------------------------

/** A gateway 4xx (a bad `x-gateway-*` header, a config that does not resolve) as invalid params naming the field. */
function asRpcError(err: unknown): unknown {
  if (err instanceof GatewayError && err.status < 500) return new McpError(ErrorCode.InvalidParams, err.message, { param: err.param, code: err.code });
  return err;
}

function rateLimited(err: GatewayError): McpError {
  const retryAfter = Number(err.headers['retry-after']);
  return new McpError(MCP_RATE_LIMITED, err.message, {
    type: err.type,
    code: err.code,
    retry_after: Number.isFinite(retryAfter) ? retryAfter : null,
    headers: err.headers,
  });
}

function guardrailBlocked(outcome: GuardrailOutcome, hooks: { before: HookResult[]; after: HookResult[] }, what: 'arguments' | 'result'): McpError {
  const blocking = outcome.hook_results.find((h) => !h.verdict && h.deny) ?? outcome.hook_results.find((h) => !h.verdict);
  const failed = blocking?.checks.filter((c) => !c.verdict).map((c) => c.id) ?? [];
  const message = `The tool call's ${what} ${what === 'arguments' ? 'were' : 'was'} blocked by guardrail '${blocking?.id ?? 'unknown'}'${failed.length ? `: ${failed.join(', ')} failed` : ''}.`;
  return new McpError(MCP_GUARDRAIL_BLOCKED, outcome.message ? `${message} ${outcome.message}` : message, {
    type: 'guardrail_error',
    code: 'guardrail_blocked',
    guardrail: blocking?.id ?? null,
    hook_results: { before_request_hooks: hooks.before, after_request_hooks: hooks.after },
  });
}

// ---- guardrails ------------------------------------------------------------------------------

type GuardrailRefs = Array<string | Record<string, unknown>>;

/**
 * The guardrails of the request's config (`x-gateway-config`, or the key's default config):
 * the top level's `input_guardrails` run on a call's arguments, its `output_guardrails` on
 * its result, as they run on a model request's input and answer.
 */
async function guardrailsOf(req: CallerRequest): Promise<{ input: GuardrailRefs; output: GuardrailRefs }> {
  if (!req.headers['x-gateway-config'] && !req.auth.defaultConfig) return { input: [], output: [] };
  const { config } = await resolveConfig(req);
  return { input: config.input_guardrails ?? [], output: config.output_guardrails ?? [] };
}

const resultText = (result: CallToolResult): string =>
  result.content
    .filter((c) => c.type === 'text')
    .map((c) => (c as { text: string }).text)
    .join('\n');

/** Arguments after a transforming guardrail (PII redaction), when its text is still a JSON object. */
function transformedArguments(text: string | undefined, args: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return args;
  try {
    const parsed = JSON.parse(text) as unknown;
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : args;
  } catch {
    return args;
  }
}

/** A result after a transforming guardrail: its one text item replaced (several items are left as they are). */
function transformedResult(text: string | undefined, result: CallToolResult): CallToolResult {
  const texts = result.content.filter((c) => c.type === 'text');
  if (text === undefined || texts.length !== 1) return result;
  return { ...result, content: result.content.map((c) => (c.type === 'text' ? { ...c, text } : c)) };
}

// ---- the call ----------------------------------------------------------------------------------

const byteLength = (value: unknown): number => Buffer.byteLength(JSON.stringify(value ?? {}));

/** HTTP-like status of the log record for each way a call ends. */
function statusOf(err: unknown): { status: number; mcpStatus: ToolCallStatus } {
  if (!(err instanceof McpError)) return { status: 500, mcpStatus: 'error' };
  if (err.code === ErrorCode.RequestTimeout) return { status: 504, mcpStatus: 'timeout' };
  if (err.code === MCP_RATE_LIMITED) return { status: 429, mcpStatus: 'refused' };
  if (err.code === MCP_GUARDRAIL_BLOCKED) return { status: 446, mcpStatus: 'refused' };
  const rule = (err.data as { rule?: unknown } | undefined)?.rule;
  if (rule === 'allowed_mcp' || rule === 'allowed_tools') return { status: 403, mcpStatus: 'refused' };
  if (err.code === ErrorCode.InvalidParams) return { status: 400, mcpStatus: 'refused' };
  return { status: 502, mcpStatus: 'error' };
}

/**
 * Run one tool call under the key's allow-lists, the workspace's `tool_calls` policies and
 * the config's guardrails, and record it. Resolves to the server's result (`isError` results
 * too); rejects with an McpError for every refusal and failure.
 */
export async function governedToolCall(call: ToolCall): Promise<CallToolResult> {
  const { req, server, tool } = call;
  const started = Date.now();
  const facts: RequestFacts = openRequestLog(req, TOOL_CALL_ROUTE);
  const hooks = { before: [] as HookResult[], after: [] as HookResult[] };
  const extra: Record<string, unknown> = {
    kind: 'mcp',
    mcp_server: server.slug,
    mcp_tool: tool,
    mcp_status: 'error',
    is_error: false,
    request_bytes: byteLength(call.arguments),
    response_bytes: null,
  };
  facts.extra = extra;
  let upstreamStarted: number | undefined;
  try {
    const metadata = (() => {
      try {
        return parseGatewayOptions(req.headers).metadata;
      } catch (err) {
        throw asRpcError(err);
      }
    })();
    facts.metadata = metadata;
    const refused = refusalOf(req.auth, server, tool);
    if (refused) throw refused;

    const grant = await enforceRateLimits({
      workspaceId: req.auth.workspaceId,
      organisationId: req.auth.organisationId,
      apiKeyId: req.auth.keyId,
      metadata,
      toolCall: { server: server.slug, tool },
      context: req.context,
    }).catch((err: unknown) => {
      if (err instanceof GatewayError && err.status === 429) {
        facts.rateLimited = true;
        limitHeaders.set(req.context, err.headers);
        throw rateLimited(err);
      }
      throw err;
    });
    if (Object.keys(grant.headers).length) limitHeaders.set(req.context, grant.headers);
    // No first byte to keep clear here: the units ahead are refilled at once.
    refillRateLimitUnits(grant);

    const guardrails = await guardrailsOf(req).catch((err: unknown) => {
      throw asRpcError(err);
    });
    const requestInfo = { route: TOOL_CALL_ROUTE, model: `${server.slug}/${tool}`, metadata, headers: req.headers };
    let args = call.arguments;
    if (guardrails.input.length) {
      const { evaluateGuardrails } = await loadEvaluator();
      const outcome = await evaluateGuardrails(
        guardrails.input,
        req.auth.workspaceId,
        { kind: 'input', text: JSON.stringify(args ?? {}), json: args ?? {}, request: requestInfo },
        { param: 'input_guardrails' },
      ).catch((err: unknown) => {
        throw asRpcError(err);
      });
      hooks.before.push(...outcome.hook_results);
      extra.hook_results = { before_request_hooks: hooks.before, after_request_hooks: hooks.after };
      if (outcome.verdict === 'block') {
        facts.guardrailBlocked = true;
        throw guardrailBlocked(outcome, hooks, 'arguments');
      }
      args = transformedArguments(outcome.transformedText, args);
    }

    upstreamStarted = Date.now();
    let result = (await withUpstream(server, (client) =>
      client.callTool({ name: tool, arguments: args }, undefined, { timeout: server.timeout_ms, ...(call.onprogress ? { onprogress: call.onprogress } : {}) }),
    )) as CallToolResult;
    facts.upstreamLatencyMs = Date.now() - upstreamStarted;
    extra.response_bytes = byteLength(result);
    extra.is_error = result.isError === true;

    if (guardrails.output.length) {
      const { evaluateGuardrails } = await loadEvaluator();
      const outcome = await evaluateGuardrails(
        guardrails.output,
        req.auth.workspaceId,
        { kind: 'output', text: resultText(result), json: result.structuredContent ?? result, request: requestInfo },
        { param: 'output_guardrails' },
      ).catch((err: unknown) => {
        throw asRpcError(err);
      });
      hooks.after.push(...outcome.hook_results);
      extra.hook_results = { before_request_hooks: hooks.before, after_request_hooks: hooks.after };
      if (outcome.verdict === 'block') {
        facts.guardrailBlocked = true;
        throw guardrailBlocked(outcome, hooks, 'result');
      }
      result = transformedResult(outcome.transformedText, result);
    }

    facts.status = 200;
    extra.mcp_status = result.isError === true ? 'error' : 'ok';
    log.info('mcp tool call', { server: server.slug, tool, is_error: result.isError === true, latency_ms: Date.now() - started }, req.context);
    writeToolCallMetrics({ server: server.slug, failed: result.isError === true, latencyMs: Date.now() - started });
    return result;
  } catch (err) {
    if (upstreamStarted !== undefined && facts.upstreamLatencyMs === undefined) facts.upstreamLatencyMs = Date.now() - upstreamStarted;
    const { status, mcpStatus } = statusOf(err);
    facts.status = status;
    extra.mcp_status = mcpStatus;
    extra.error = err instanceof Error ? err.message : String(err);
    log.warn('mcp tool call failed', { server: server.slug, tool, status: mcpStatus, latency_ms: Date.now() - started, error: extra.error }, req.context);
    writeToolCallMetrics({ server: server.slug, failed: true, latencyMs: Date.now() - started });
    throw err;
  }
}
