/**
 * Server-side MCP tools in the Responses API, on any provider: the gateway lists each `mcp`
 * tool's server, offers the tools to the model as functions, calls the ones it asks for
 * (callMcpTool) and feeds the results back through the chat core, turn after turn, until the
 * model answers without tool calls, asks for one of the caller's own functions, needs an
 * approval, or the budget (`max_tool_calls`, MAX_MCP_ROUNDS) is spent.
 *
 * Every model turn is a chat-core call (routing, retries, limits, guardrails, pricing and a
 * request-log record of its own, all under the request's trace id).
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { inputItemsOf, responsesToChat, type ConversationItem } from '../../formats/responses/request';
import { newResponseId, type ResponseContext } from '../../formats/responses/response';
import type { ResponsesItem, ResponsesRequest } from '../../formats/responses/schema';
import type { McpApprovalRequestItem, McpCallItem, McpListedTool, McpListToolsItem, ResponsesStreamEvent } from '../../formats/responses/types';
import { chatCall, type ChatOutcome } from '../../gateway/chat-core';
import { openRequestLog, requestFacts } from '../../gateway/request-log';
import type { ChatRequest, FinishReason, Usage } from '../../providers/types';
import type { RequestFacts } from '../../spend/request-record';
import { asGatewayError, badRequest, GatewayError } from '../../shared/errors';
import type { GatewayRequest } from '../../shared/http/types';
import { callMcpTool, listMcpTools, resultText } from './calls';
import { McpResponseBuilder } from './events';
import { McpToolNames } from './names';
import { needsApproval, resolveMcpTools, type McpToolSpec } from './spec';

/** Model turns that may call tools in one response; the turn after the last is asked to answer. */
export const MAX_MCP_ROUNDS = 20;
/** What the model is told for a call the user refused or the budget did not allow. */
const REFUSED = 'The user refused this tool call.';
const OVER_BUDGET = 'Not run: the limit of tool calls for this response is reached.';

type ToolCall = { id: string; name: string; arguments: string };
interface Turn {
  text: string;
  refusal: string | null;
  toolCalls: ToolCall[];
  finish: FinishReason | null;
  usage: Usage | undefined;
}
/** A model turn that did not succeed before any of its output: the HTTP route answers it as the provider's failure. */
export class TurnFailure extends Error {
  constructor(readonly outcome: Extract<ChatOutcome, { kind: 'failure' }>) {
    super('model turn failed');
  }
}
/** Yielded once the first model turn is under way: from then on, failures are stream events. */
export const COMMITTED = Symbol('committed');
export type LoopStep = ResponsesStreamEvent[] | typeof COMMITTED;

export interface McpRunInput {
  req: GatewayRequest;
  /** The request, `item_reference`s resolved. */
  body: ResponsesRequest;
  /** The stored conversation `previous_response_id` names. */
  previous: ConversationItem[];
  stream: boolean;
}

function addUsage(total: Usage | undefined, more: Usage | undefined | null): Usage | undefined {
  if (!more) return total;
  if (!total) return { prompt_tokens: more.prompt_tokens, completion_tokens: more.completion_tokens, total_tokens: more.total_tokens };
  return {
    prompt_tokens: total.prompt_tokens + more.prompt_tokens,
    completion_tokens: total.completion_tokens + more.completion_tokens,
    total_tokens: total.total_tokens + more.total_tokens,
  };
}

function parseArguments(json: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(json || '{}') as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function maxToolCallsOf(body: ResponsesRequest): number {
  const value = (body as { max_tool_calls?: unknown }).max_tool_calls;
  if (value === undefined || value === null) return Infinity;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1)
    throw badRequest('`max_tool_calls` must be an integer of at least 1.', 'max_tool_calls', 'invalid_value');
  return value;
}

/** The request as OpenAI echoes it: header values and tokens of mcp tools left out. */
function echoedRequest(body: ResponsesRequest): ResponsesRequest {
  const tools = body.tools?.map((t) => {
    if (t.type !== 'mcp') return t;
    const { headers: _h, authorization: _a, ...rest } = t as Record<string, unknown>;
    return { ...rest, type: 'mcp', headers: null };
  });
  return tools ? { ...body, tools } : body;
}

type Approval = { request: McpApprovalRequestItem; spec: McpToolSpec; approve: boolean; where: string };

/** The loop of one response; `steps` runs it, yielding stream events as they are made. */
export class McpToolLoop {
  readonly builder: McpResponseBuilder;
  readonly ctx: ResponseContext;
  #specs: McpToolSpec[] = [];
  #names: McpToolNames;
  #offered: NonNullable<ResponsesRequest['tools']> = [];
  #callerTools: NonNullable<ResponsesRequest['tools']>;
  #budget: number;
  #usage: Usage | undefined;
  #turns = 0;
  /** Status and gateway headers of the first model turn: the HTTP answer's. */
  status = 200;
  headers: Record<string, string> = {};
  /** Tool results of the approvals this request answers, by approval request id. */
  #answered = new Map<string, { approval: Approval; output: string }>();

  constructor(private readonly input: McpRunInput) {
    const { body } = input;
    this.ctx = { id: newResponseId(), createdAt: Math.floor(Date.now() / 1000), request: echoedRequest(body), model: body.model ?? '' };
    this.builder = new McpResponseBuilder(this.ctx, input.stream);
    this.#callerTools = (body.tools ?? []).filter((t) => t.type !== 'mcp');
    this.#names = new McpToolNames(this.#callerTools.map((t) => String((t as { name?: unknown }).name ?? '')));
    this.#budget = maxToolCallsOf(body);
  }

  /** Resolve the servers and check the approvals answered; a 400 here is the request's. */
  async prepare(): Promise<void> {
    this.#specs = await resolveMcpTools(this.input.req.auth.workspaceId, this.input.body.tools ?? []);
    this.#approvals();
  }

  async *steps(): AsyncGenerator<LoopStep, void, undefined> {
    await this.#listTools();
    yield this.builder.drain();
    for (const answered of this.#answered.values()) {
      const { approval } = answered;
      if (approval.approve) {
        answered.output = await this.#runCall(approval.spec, approval.request.name, approval.request.arguments, approval.request.id);
        yield this.builder.drain();
      }
    }
    const chat = responsesToChat(this.#chatBody(), this.#chatItems(this.input.previous));
    const messages = [...chat.messages];
    for (let round = 0; ; round++) {
      const lastRound = round >= MAX_MCP_ROUNDS || this.#budget <= 0;
      const turnRequest: ChatRequest = { ...chat, messages, ...(lastRound && this.#offered.length ? { tool_choice: 'none' as const } : {}) };
      const turn = yield* this.#modelTurn(turnRequest);
      this.#usage = addUsage(this.#usage, turn.usage);
      if (turn.refusal) this.builder.refusal(turn.refusal);
      this.builder.closeText(turn.finish === 'length' || turn.finish === 'content_filter' ? 'incomplete' : 'completed');
      const calls = lastRound ? turn.toolCalls.filter((c) => !this.#names.lookup(c.name)) : turn.toolCalls;
      if (!calls.length) return yield this.#finish(turn.finish);
      messages.push({
        role: 'assistant',
        content: turn.text || null,
        tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
      });
      let stop = false;
      for (const call of calls) {
        const mcp = this.#names.lookup(call.name);
        if (!mcp) {
          // The caller's own function: the caller runs it, as without MCP.
          this.builder.functionCall(call.id, call.name, call.arguments);
          stop = true;
        } else if (needsApproval(mcp.spec, mcp.tool)) {
          this.builder.approvalRequest(mcp.spec.label, mcp.tool, call.arguments);
          stop = true;
        } else if (this.#budget <= 0) {
          messages.push({ role: 'tool', tool_call_id: call.id, content: OVER_BUDGET });
        } else {
          this.#budget--;
          const output = await this.#runCall(mcp.spec, mcp.tool, call.arguments);
          messages.push({ role: 'tool', tool_call_id: call.id, content: output });
        }
        yield this.builder.drain();
      }
      if (stop) return yield this.#finish(turn.finish);
    }
  }

  #finish(finish: FinishReason | null): ResponsesStreamEvent[] {
    this.builder.finish(finish === 'tool_calls' ? 'stop' : finish, this.#usage);
    return this.builder.drain();
  }

  /** One model turn: text deltas go out as they arrive; the tool calls are gathered. */
  async *#modelTurn(body: ChatRequest): AsyncGenerator<LoopStep, Turn, undefined> {
    const first = this.#turns++ === 0;
    const log: RequestFacts = first ? requestFacts(this.input.req) : openRequestLog(this.input.req, 'responses');
    let outcome: ChatOutcome;
    try {
      outcome = await chatCall({ req: this.input.req, body, log });
    } catch (err) {
      log.status = asGatewayError(err).status;
      throw err;
    }
    log.status = outcome.status;
    if (outcome.kind === 'failure') {
      if (first) throw new TurnFailure(outcome);
      throw (
        outcome.error ??
        new GatewayError(
          outcome.status,
          'upstream_error',
          `A model turn after a tool call failed: the provider answered with status ${outcome.status}.`,
          null,
          'upstream_error',
        )
      );
    }
    if (first) {
      this.ctx.model = log.model ?? this.ctx.model;
      this.status = outcome.status;
      this.headers = outcome.headers;
      yield COMMITTED;
    }
    if (outcome.kind === 'completion') {
      const message = outcome.completion.choices[0]?.message;
      const text = message?.content ?? '';
      this.builder.textDelta(text);
      const toolCalls = (message?.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
      return {
        text,
        refusal: message?.refusal ?? null,
        toolCalls,
        finish: outcome.completion.choices[0]?.finish_reason ?? null,
        usage: outcome.completion.usage,
      };
    }
    const turn: Turn = { text: '', refusal: null, toolCalls: [], finish: null, usage: undefined };
    const byIndex = new Map<number, ToolCall>();
    for await (const chunk of outcome.stream) {
      if (chunk.usage) turn.usage = chunk.usage;
      const choice = chunk.choices.find((c) => c.index === 0);
      if (!choice) continue;
      if (choice.delta.content) {
        turn.text += choice.delta.content;
        this.builder.textDelta(choice.delta.content);
        yield this.builder.drain();
      }
      for (const delta of choice.delta.tool_calls ?? []) {
        const call = byIndex.get(delta.index) ?? { id: '', name: '', arguments: '' };
        byIndex.set(delta.index, call);
        if (delta.id) call.id = delta.id;
        if (delta.function?.name) call.name += delta.function.name;
        if (delta.function?.arguments) call.arguments += delta.function.arguments;
      }
      if (choice.finish_reason) turn.finish = choice.finish_reason;
    }
    turn.toolCalls = [...byIndex.entries()].sort(([a], [b]) => a - b).map(([, c]) => c);
    return turn;
  }

  /** Run one call through callMcpTool and report it as an `mcp_call` item; returns what the model is told. */
  async #runCall(spec: McpToolSpec, tool: string, args: string, approvalRequestId?: string): Promise<string> {
    const handle = this.builder.startCall(spec.label, tool, args, approvalRequestId);
    const parsed = parseArguments(args);
    if (!parsed) {
      const error = `The arguments of '${tool}' are not a JSON object.`;
      handle.finish(null, error);
      return `Error: ${error}`;
    }
    try {
      const result = await callMcpTool({ req: this.input.req }, spec.server, tool, parsed);
      const text = resultText(result);
      if (result.isError) {
        handle.finish(null, text);
        return `Error: ${text}`;
      }
      handle.finish(text, null);
      return text;
    } catch (err) {
      const error = err instanceof McpError ? err.message.replace(/^MCP error -?\d+: /, '') : (err as Error).message;
      handle.finish(null, error);
      return `Error: ${error}`;
    }
  }

  /** List each server's tools, or take them from an `mcp_list_tools` item of the conversation; offer the allowed ones. */
  async #listTools(): Promise<void> {
    const lists = await Promise.all(
      this.#specs.map(async (spec): Promise<{ tools: McpListedTool[]; error: string | null; fresh: boolean }> => {
        const earlier = this.input.previous.findLast(
          (i): i is McpListToolsItem => i.type === 'mcp_list_tools' && (i as McpListToolsItem).server_label === spec.label,
        );
        if (earlier && !earlier.error) return { tools: earlier.tools, error: null, fresh: false };
        try {
          const tools = await listMcpTools(spec.server);
          return {
            tools: tools.map((t) => ({ name: t.name, input_schema: t.inputSchema, description: t.description ?? null, annotations: t.annotations ?? null })),
            error: null,
            fresh: true,
          };
        } catch (err) {
          return { tools: [], error: (err as Error).message.replace(/^MCP error -?\d+: /, ''), fresh: true };
        }
      }),
    );
    lists.forEach((list, i) => {
      const spec = this.#specs[i]!;
      const allowed = list.tools.filter((t) => spec.allowedTools === null || spec.allowedTools.includes(t.name));
      if (list.fresh) this.builder.listTools(spec.label, { tools: allowed, error: list.error });
      for (const tool of allowed) {
        this.#offered.push({
          type: 'function',
          name: this.#names.offer(spec, tool.name),
          description: tool.description ?? undefined,
          parameters: (tool.input_schema ?? { type: 'object', properties: {} }) as Record<string, unknown>,
        });
      }
    });
  }

  /** The `mcp_approval_response` inputs, each matched with the approval request it answers. */
  #approvals(): void {
    const input = inputItemsOf(this.input.body);
    const requests = [...this.input.previous, ...input].filter((i): i is McpApprovalRequestItem => i.type === 'mcp_approval_request');
    input.forEach((item, i) => {
      if (item.type !== 'mcp_approval_response') return;
      const where = `input[${i}]`;
      const { approval_request_id: id, approve } = item as { approval_request_id?: unknown; approve?: unknown };
      if (typeof approve !== 'boolean') throw badRequest('`approve` must be true or false.', `${where}.approve`, 'invalid_value');
      const request = requests.find((r) => r.id === id);
      if (!request) {
        throw badRequest(
          `No mcp_approval_request '${String(id)}' in this conversation (send previous_response_id, or the request item in input).`,
          `${where}.approval_request_id`,
          'approval_request_not_found',
        );
      }
      const spec = this.#specs.find((s) => s.label === request.server_label);
      if (!spec)
        throw badRequest(`The approval is for server_label '${request.server_label}', which is not among this request's mcp tools.`, where, 'invalid_value');
      this.#answered.set(request.id, { approval: { request, spec, approve, where }, output: REFUSED });
    });
  }

  /** The request as the chat translation takes it: the MCP tools as functions, MCP items as function calls and results. */
  #chatBody(): ResponsesRequest {
    const { body } = this.input;
    const input = typeof body.input === 'string' || body.input === undefined ? body.input : this.#chatItems(body.input);
    return { ...body, input: input as ResponsesRequest['input'], tools: [...this.#callerTools, ...this.#offered] };
  }

  #chatItems(items: readonly ConversationItem[]): ResponsesItem[] {
    return items.flatMap((item): ResponsesItem[] => {
      switch (item.type) {
        case 'mcp_list_tools':
        case 'mcp_approval_request':
          return [];
        case 'mcp_call': {
          const call = item as McpCallItem;
          const output = call.error ? `Error: ${call.error}` : (call.output ?? '');
          return this.#callPair(call.id, call.server_label, call.name, call.arguments, output);
        }
        case 'mcp_approval_response': {
          const answered = this.#answered.get(String((item as { approval_request_id?: unknown }).approval_request_id));
          if (!answered) return [];
          const { request } = answered.approval;
          return this.#callPair(request.id, request.server_label, request.name, request.arguments, answered.output);
        }
        default:
          return [item as ResponsesItem];
      }
    });
  }

  #callPair(id: string, label: string, tool: string, args: string, output: string): ResponsesItem[] {
    return [
      { type: 'function_call', call_id: id, name: this.#names.nameOf(label, tool), arguments: args },
      { type: 'function_call_output', call_id: id, output },
    ];
  }
}
