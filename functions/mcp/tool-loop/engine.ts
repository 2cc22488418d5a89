/**
 * The tool loop shared by the APIs that run MCP tools server-side (Responses `mcp` tools,
 * Messages `mcp_servers`): list the servers' tools and offer them to the model as functions,
 * call the ones it asks for (callMcpTool) and feed the results back through the chat core,
 * turn after turn, until the model answers without tool calls, asks for one of the caller's
 * own functions, needs an approval, or the budget (`max_tool_calls`, MAX_MCP_ROUNDS) is spent.
 * What happens goes to a LoopSink, which builds the API's own output (and stream events).
 *
 * Every model turn is a chat-core call (routing, retries, limits, guardrails, pricing and a
 * request-log record of its own, all under the request's trace id).
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { McpListedTool } from '../../formats/responses/types';
import type { StreamFailure } from '../../formats/sse';
import { chatCall, type ChatOutcome } from '../../gateway/chat-core';
import { openRequestLog, requestFacts } from '../../gateway/request-log';
import type { ChatRequest, FinishReason, Usage } from '../../providers/types';
import type { RequestFacts } from '../../spend/request-record';
import { asGatewayError, GatewayError } from '../../shared/errors';
import type { GatewayRequest, HttpResponse } from '../../shared/http/types';
import { callMcpTool, listMcpTools, resultText } from './calls';
import { McpToolNames } from './names';
import { needsApproval, type McpToolSpec } from './spec';

/** Model turns that may call tools in one response; the turn after the last is asked to answer. */
export const MAX_MCP_ROUNDS = 20;
const OVER_BUDGET = 'Not run: the limit of tool calls for this response is reached.';

/** Where the loop reports what happens, in order; `drain` hands over the stream events made since the last call. */
export interface LoopSink<E> {
  listTools(label: string, listed: { tools: McpListedTool[]; error: string | null }): void;
  startCall(label: string, name: string, args: string, approvalRequestId?: string): { finish(output: string | null, error: string | null): void };
  approvalRequest(label: string, name: string, args: string): void;
  functionCall(callId: string, name: string, args: string): void;
  textDelta(delta: string): void;
  refusal(text: string): void;
  closeText(status: 'completed' | 'incomplete'): void;
  finish(finish: FinishReason | null, usage: Usage | undefined): void;
  fail(failure: StreamFailure): void;
  drain(): E[];
}

/** A tool offered to the model, in no API's shape yet. */
export interface OfferedTool {
  name: string;
  description: string | undefined;
  parameters: Record<string, unknown>;
}

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
export type LoopStep<E> = E[] | typeof COMMITTED;

/**
 * Runs the loop's steps up to the point the caller is answered from: streamed, the first
 * model turn under way (COMMITTED; the rest is read from `steps` as the stream goes on);
 * not streamed, the end. The events before it are pushed to `early`. A TurnFailure before
 * that point is the HTTP answer (nothing has been sent yet), built by `failed`.
 */
export async function runUntilCommitted<E>(
  steps: AsyncGenerator<LoopStep<E>, void, undefined>,
  stream: boolean,
  early: E[],
  failed: (failure: TurnFailure) => HttpResponse | Promise<HttpResponse>,
): Promise<HttpResponse | undefined> {
  try {
    for (let next = await steps.next(); !next.done; next = await steps.next()) {
      if (next.value === COMMITTED) {
        if (stream) break;
        continue;
      }
      early.push(...next.value);
    }
  } catch (err) {
    if (err instanceof TurnFailure) return await failed(err);
    throw err;
  }
  return undefined;
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

const mcpMessage = (err: unknown) => (err instanceof McpError ? err.message.replace(/^MCP error -?\d+: /, '') : (err as Error).message);

export class ToolLoop<E> {
  readonly names: McpToolNames;
  readonly offered: OfferedTool[] = [];
  /** Status and gateway headers of the first model turn: the HTTP answer's. */
  status = 200;
  headers: Record<string, string> = {};
  /** The model as routed, once the first turn ran. */
  model: string | undefined;
  #usage: Usage | undefined;
  #turns = 0;

  constructor(
    private readonly req: GatewayRequest,
    readonly sink: LoopSink<E>,
    callerFunctions: Iterable<string>,
    private budget: number,
    /** The route of the request-log records of the turns after the first. */
    private readonly route: string,
  ) {
    this.names = new McpToolNames(callerFunctions);
  }

  /** List each server's tools (or take them from `earlier`, a list the conversation holds) and offer the allowed ones. */
  async offerTools(specs: McpToolSpec[], earlier: (label: string) => McpListedTool[] | undefined = () => undefined): Promise<void> {
    const lists = await Promise.all(
      specs.map(async (spec): Promise<{ tools: McpListedTool[]; error: string | null; fresh: boolean }> => {
        const known = earlier(spec.label);
        if (known) return { tools: known, error: null, fresh: false };
        try {
          const tools = await listMcpTools(spec.server);
          return {
            tools: tools.map((t) => ({ name: t.name, input_schema: t.inputSchema, description: t.description ?? null, annotations: t.annotations ?? null })),
            error: null,
            fresh: true,
          };
        } catch (err) {
          return { tools: [], error: mcpMessage(err), fresh: true };
        }
      }),
    );
    lists.forEach((list, i) => {
      const spec = specs[i]!;
      const allowed = list.tools.filter((t) => spec.allowedTools === null || spec.allowedTools.includes(t.name));
      if (list.fresh) this.sink.listTools(spec.label, { tools: allowed, error: list.error });
      for (const tool of allowed) {
        this.offered.push({
          name: this.names.offer(spec, tool.name),
          description: tool.description ?? undefined,
          parameters: (tool.input_schema ?? { type: 'object', properties: {} }) as Record<string, unknown>,
        });
      }
    });
  }

  /** Run one call through callMcpTool and report it; returns what the model is told. */
  async runCall(spec: McpToolSpec, tool: string, args: string, approvalRequestId?: string): Promise<string> {
    const handle = this.sink.startCall(spec.label, tool, args, approvalRequestId);
    const parsed = parseArguments(args);
    if (!parsed) {
      const error = `The arguments of '${tool}' are not a JSON object.`;
      handle.finish(null, error);
      return `Error: ${error}`;
    }
    try {
      const result = await callMcpTool({ req: this.req }, spec.server, tool, parsed);
      const text = resultText(result);
      if (result.isError) {
        handle.finish(null, text);
        return `Error: ${text}`;
      }
      handle.finish(text, null);
      return text;
    } catch (err) {
      const error = mcpMessage(err);
      handle.finish(null, error);
      return `Error: ${error}`;
    }
  }

  /** The model turns, from `chat` (the conversation so far, with the offered tools). */
  async *rounds(chat: ChatRequest): AsyncGenerator<LoopStep<E>, void, undefined> {
    const messages = [...chat.messages];
    for (let round = 0; ; round++) {
      const lastRound = round >= MAX_MCP_ROUNDS || this.budget <= 0;
      const turnRequest: ChatRequest = { ...chat, messages, ...(lastRound && this.offered.length ? { tool_choice: 'none' as const } : {}) };
      const turn = yield* this.#modelTurn(turnRequest);
      this.#usage = addUsage(this.#usage, turn.usage);
      if (turn.refusal) this.sink.refusal(turn.refusal);
      this.sink.closeText(turn.finish === 'length' || turn.finish === 'content_filter' ? 'incomplete' : 'completed');
      const calls = lastRound ? turn.toolCalls.filter((c) => !this.names.lookup(c.name)) : turn.toolCalls;
      if (!calls.length) return yield this.#finish(turn.finish);
      messages.push({
        role: 'assistant',
        content: turn.text || null,
        tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
      });
      let stop = false;
      for (const call of calls) {
        const mcp = this.names.lookup(call.name);
        if (!mcp) {
          // The caller's own function: the caller runs it, as without MCP.
          this.sink.functionCall(call.id, call.name, call.arguments);
          stop = true;
        } else if (needsApproval(mcp.spec, mcp.tool)) {
          this.sink.approvalRequest(mcp.spec.label, mcp.tool, call.arguments);
          stop = true;
        } else if (this.budget <= 0) {
          messages.push({ role: 'tool', tool_call_id: call.id, content: OVER_BUDGET });
        } else {
          this.budget--;
          const output = await this.runCall(mcp.spec, mcp.tool, call.arguments);
          messages.push({ role: 'tool', tool_call_id: call.id, content: output });
        }
        yield this.sink.drain();
      }
      if (stop) return yield this.#finish('tool_calls');
    }
  }

  #finish(finish: FinishReason | null): E[] {
    this.sink.finish(finish, this.#usage);
    return this.sink.drain();
  }

  /** One model turn: text deltas go out as they arrive; the tool calls are gathered. */
  async *#modelTurn(body: ChatRequest): AsyncGenerator<LoopStep<E>, Turn, undefined> {
    const first = this.#turns++ === 0;
    const log: RequestFacts = first ? requestFacts(this.req) : openRequestLog(this.req, this.route);
    let outcome: ChatOutcome;
    try {
      outcome = await chatCall({ req: this.req, body, log });
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
      this.model = log.model;
      this.status = outcome.status;
      this.headers = outcome.headers;
      yield COMMITTED;
    }
    if (outcome.kind === 'completion') {
      const message = outcome.completion.choices[0]?.message;
      const text = message?.content ?? '';
      this.sink.textDelta(text);
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
        this.sink.textDelta(choice.delta.content);
        yield this.sink.drain();
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
}
