/**
 * The output of a Responses request whose MCP tools the gateway runs, built item by item;
 * when streamed, each step also yields its events, numbered and in OpenAI's order:
 *
 * - `mcp_list_tools`: output_item.added (no tools yet) -> mcp_list_tools.in_progress ->
 *   mcp_list_tools.completed | failed -> output_item.done (with the tools);
 * - `mcp_call`: output_item.added (status in_progress) -> mcp_call_arguments.delta ->
 *   mcp_call_arguments.done -> mcp_call.in_progress -> (the call runs) ->
 *   mcp_call.completed | failed -> output_item.done;
 * - `mcp_approval_request`: output_item.added -> output_item.done;
 * - `function_call` (the caller's own tools): added -> function_call_arguments.delta/.done -> done;
 * - message text: added -> content_part.added -> output_text.delta* -> output_text.done ->
 *   content_part.done -> output_item.done.
 */
import { newId } from '../../shared/ids';
import type { FinishReason, Usage } from '../../providers/types';
import { finishedResponse, newFunctionCallItemId, newMessageItemId, responseShell, type ResponseContext } from '../../formats/responses/response';
import type {
  FunctionCallItem,
  McpApprovalRequestItem,
  McpCallItem,
  McpListedTool,
  McpListToolsItem,
  OutputItem,
  OutputMessage,
  OutputText,
  ResponseObject,
  ResponsesStreamEvent,
} from '../../formats/responses/types';
import type { StreamFailure } from '../../formats/sse';
import type { LoopSink } from './engine';

const outputText = (text: string): OutputText => ({ type: 'output_text', text, annotations: [], logprobs: [] });

type OpenText = { outputIndex: number; item: OutputMessage; text: string };

export class McpResponseBuilder implements LoopSink<ResponsesStreamEvent> {
  readonly output: OutputItem[] = [];
  #seq = 0;
  #events: ResponsesStreamEvent[] = [];
  #text: OpenText | undefined;
  #final: ResponseObject | undefined;

  /** `streaming`: keep the events for `drain`; otherwise only the items are built. */
  constructor(
    private readonly ctx: ResponseContext,
    private readonly streaming: boolean,
  ) {
    if (streaming) {
      const shell = responseShell(ctx);
      this.#emit('response.created', { response: shell });
      this.#emit('response.in_progress', { response: shell });
    }
  }

  get response(): ResponseObject | undefined {
    return this.#final;
  }

  /** The events since the last drain. */
  drain(): ResponsesStreamEvent[] {
    const events = this.#events;
    this.#events = [];
    return events;
  }

  listTools(label: string, listed: { tools: McpListedTool[]; error: string | null }): void {
    const item: McpListToolsItem = { id: newId('mcpl_'), type: 'mcp_list_tools', server_label: label, tools: [] };
    const at = this.#add(item);
    this.#emit('response.mcp_list_tools.in_progress', { item_id: item.id, output_index: at });
    item.tools = listed.tools;
    if (listed.error) item.error = listed.error;
    this.#emit(listed.error ? 'response.mcp_list_tools.failed' : 'response.mcp_list_tools.completed', { item_id: item.id, output_index: at });
    this.#done(at);
  }

  /** Announce a call about to run; `finish` closes it with its output or error. */
  startCall(label: string, name: string, args: string, approvalRequestId?: string): { finish(output: string | null, error: string | null): void } {
    const item: McpCallItem = { id: newId('mcp_'), type: 'mcp_call', status: 'in_progress', server_label: label, name, arguments: '' };
    if (approvalRequestId) item.approval_request_id = approvalRequestId;
    const at = this.#add(item);
    item.arguments = args;
    this.#emit('response.mcp_call_arguments.delta', { item_id: item.id, output_index: at, delta: args });
    this.#emit('response.mcp_call_arguments.done', { item_id: item.id, output_index: at, arguments: args });
    this.#emit('response.mcp_call.in_progress', { item_id: item.id, output_index: at });
    return {
      finish: (output, error) => {
        item.output = output;
        item.error = error;
        item.status = error ? 'failed' : 'completed';
        this.#emit(error ? 'response.mcp_call.failed' : 'response.mcp_call.completed', { item_id: item.id, output_index: at });
        this.#done(at);
      },
    };
  }

  approvalRequest(label: string, name: string, args: string): void {
    const item: McpApprovalRequestItem = { id: newId('mcpr_'), type: 'mcp_approval_request', server_label: label, name, arguments: args };
    this.#done(this.#add(item));
  }

  functionCall(callId: string, name: string, args: string): void {
    const item: FunctionCallItem = { id: newFunctionCallItemId(), type: 'function_call', status: 'in_progress', call_id: callId, name, arguments: '' };
    const at = this.#add(item);
    item.arguments = args;
    this.#emit('response.function_call_arguments.delta', { item_id: item.id, output_index: at, delta: args });
    this.#emit('response.function_call_arguments.done', { item_id: item.id, output_index: at, name, arguments: args });
    item.status = 'completed';
    this.#done(at);
  }

  textDelta(delta: string): void {
    if (!delta) return;
    let open = this.#text;
    if (!open) {
      const item: OutputMessage = { id: newMessageItemId(), type: 'message', status: 'in_progress', role: 'assistant', content: [] };
      open = this.#text = { outputIndex: this.#add(item), item, text: '' };
      this.#emit('response.content_part.added', { ...this.#partRef(open), part: outputText('') });
    }
    open.text += delta;
    this.#emit('response.output_text.delta', { ...this.#partRef(open), delta, logprobs: [] });
  }

  refusal(refusal: string): void {
    const item: OutputMessage = { id: newMessageItemId(), type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'refusal', refusal }] };
    this.#done(this.#add(item));
  }

  closeText(status: 'completed' | 'incomplete' = 'completed'): void {
    const open = this.#text;
    if (!open) return;
    this.#text = undefined;
    const part = outputText(open.text);
    open.item.content = [part];
    open.item.status = status;
    this.#emit('response.output_text.done', { ...this.#partRef(open), text: open.text, logprobs: [] });
    this.#emit('response.content_part.done', { ...this.#partRef(open), part });
    this.#done(open.outputIndex);
  }

  finish(finish: FinishReason | null, usage: Usage | undefined): ResponseObject {
    this.closeText(finish === 'length' || finish === 'content_filter' ? 'incomplete' : 'completed');
    this.#final = finishedResponse(
      this.ctx,
      this.output.map((i) => structuredClone(i)),
      finish,
      usage,
    );
    this.#emit(this.#final.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: this.#final });
    return this.#final;
  }

  /** A failure after the stream began: `error` then `response.failed`, as the Responses stream encoder sends them. */
  fail(failure: StreamFailure): void {
    const code = failure.code ?? (failure.status === 429 ? 'rate_limit_exceeded' : 'server_error');
    if (this.#text) {
      this.#text.item.content = [outputText(this.#text.text)];
      this.#text.item.status = 'incomplete';
      this.#text = undefined;
    }
    this.#final = {
      ...responseShell(this.ctx),
      status: 'failed',
      error: { code, message: failure.message },
      output: this.output.map((i) => structuredClone(i)),
      usage: null,
    };
    this.#emit('error', {
      code,
      message: failure.message,
      param: failure.param ?? null,
      error: { type: failure.type ?? 'server_error', code, message: failure.message, param: failure.param ?? null },
    });
    this.#emit('response.failed', { response: this.#final });
  }

  #add(item: OutputItem): number {
    this.output.push(item);
    const at = this.output.length - 1;
    this.#emit('response.output_item.added', { output_index: at, item: this.streaming ? structuredClone(item) : item });
    return at;
  }

  #done(at: number): void {
    if (this.streaming) this.#emit('response.output_item.done', { output_index: at, item: structuredClone(this.output[at]!) });
  }

  #emit(type: string, body: Record<string, unknown>): void {
    if (this.streaming) this.#events.push({ type, sequence_number: this.#seq++, ...body });
  }

  #partRef(open: OpenText) {
    return { item_id: open.item.id, output_index: open.outputIndex, content_index: 0 };
  }
}
