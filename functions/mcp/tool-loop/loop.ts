/**
 * Server-side MCP tools in the Responses API, on any provider: the request's `mcp` tools
 * resolved, `mcp_approval_response` inputs matched with their requests, the conversation
 * translated to chat (MCP items as function calls and results), then the shared tool loop
 * (engine.ts) with a sink that builds the Responses output items and events.
 */
import { inputItemsOf, responsesToChat, type ConversationItem } from '../../formats/responses/request';
import { newResponseId, type ResponseContext } from '../../formats/responses/response';
import type { ResponsesItem, ResponsesRequest } from '../../formats/responses/schema';
import type { McpApprovalRequestItem, McpCallItem, McpListToolsItem, ResponsesStreamEvent } from '../../formats/responses/types';
import { badRequest } from '../../shared/errors';
import type { GatewayRequest } from '../../shared/http/types';
import { COMMITTED, ToolLoop, type LoopStep } from './engine';
import { McpResponseBuilder } from './events';
import { resolveMcpTools, type McpToolSpec } from './spec';

/** What the model is told for a call the user refused. */
const REFUSED = 'The user refused this tool call.';

export interface McpRunInput {
  req: GatewayRequest;
  /** The request, `item_reference`s resolved. */
  body: ResponsesRequest;
  /** The stored conversation `previous_response_id` names. */
  previous: ConversationItem[];
  stream: boolean;
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

type Approval = { request: McpApprovalRequestItem; spec: McpToolSpec; approve: boolean };

/** One Responses request's tool loop; `steps` runs it, yielding stream events as they are made. */
export class McpToolLoop {
  readonly builder: McpResponseBuilder;
  readonly ctx: ResponseContext;
  readonly loop: ToolLoop<ResponsesStreamEvent>;
  #specs: McpToolSpec[] = [];
  #callerTools: NonNullable<ResponsesRequest['tools']>;
  /** Tool results of the approvals this request answers, by approval request id. */
  #answered = new Map<string, { approval: Approval; output: string }>();

  constructor(private readonly input: McpRunInput) {
    const { body } = input;
    this.ctx = { id: newResponseId(), createdAt: Math.floor(Date.now() / 1000), request: echoedRequest(body), model: body.model ?? '' };
    this.builder = new McpResponseBuilder(this.ctx, input.stream);
    this.#callerTools = (body.tools ?? []).filter((t) => t.type !== 'mcp');
    const callerNames = this.#callerTools.map((t) => String((t as { name?: unknown }).name ?? ''));
    this.loop = new ToolLoop(input.req, this.builder, callerNames, maxToolCallsOf(body), 'responses');
  }

  /** Resolve the servers and check the approvals answered; a 400 here is the request's. */
  async prepare(): Promise<void> {
    this.#specs = await resolveMcpTools(this.input.req.auth.workspaceId, this.input.body.tools ?? []);
    this.#approvals();
  }

  async *steps(): AsyncGenerator<LoopStep<ResponsesStreamEvent>, void, undefined> {
    const earlier = (label: string) =>
      this.input.previous.findLast(
        (i): i is McpListToolsItem => i.type === 'mcp_list_tools' && (i as McpListToolsItem).server_label === label && !(i as McpListToolsItem).error,
      )?.tools;
    await this.loop.offerTools(this.#specs, earlier);
    yield this.builder.drain();
    for (const answered of this.#answered.values()) {
      const { approval } = answered;
      if (approval.approve) {
        answered.output = await this.loop.runCall(approval.spec, approval.request.name, approval.request.arguments, approval.request.id);
        yield this.builder.drain();
      }
    }
    for await (const step of this.loop.rounds(responsesToChat(this.#chatBody(), this.#chatItems(this.input.previous)))) {
      if (step === COMMITTED) this.ctx.model = this.loop.model ?? this.ctx.model;
      yield step;
    }
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
      this.#answered.set(request.id, { approval: { request, spec, approve }, output: REFUSED });
    });
  }

  /** The request as the chat translation takes it: the MCP tools as functions, MCP items as function calls and results. */
  #chatBody(): ResponsesRequest {
    const { body } = this.input;
    const input = typeof body.input === 'string' || body.input === undefined ? body.input : this.#chatItems(body.input);
    return { ...body, input: input as ResponsesRequest['input'], tools: [...this.#callerTools, ...this.loop.offered.map((t) => ({ type: 'function', ...t }))] };
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
      { type: 'function_call', call_id: id, name: this.loop.names.nameOf(label, tool), arguments: args },
      { type: 'function_call_output', call_id: id, output },
    ];
  }
}
