/**
 * The Messages API's output of a tool loop (`mcp_servers`): content blocks `text`,
 * `mcp_tool_use` (`id`, `name`, `server_name`, `input`), `mcp_tool_result` (`tool_use_id`,
 * `is_error`, `content`) and `tool_use` for the caller's own tools; streamed, each block is
 * content_block_start -> content_block_delta* (text_delta | input_json_delta) ->
 * content_block_stop, between message_start and message_delta + message_stop.
 */
import { messageUsage, stopReasonOf, toolInputOf } from '../../formats/messages/response';
import type { MessagesStreamEvent } from '../../formats/messages/types';
import type { StreamFailure } from '../../formats/sse';
import type { FinishReason, Usage } from '../../providers/types';
import { newId } from '../../shared/ids';
import type { LoopSink } from './engine';

type Block = Record<string, unknown> & { type: string };

export class MessagesMcpSink implements LoopSink<MessagesStreamEvent> {
  readonly content: Block[] = [];
  message: Record<string, unknown> | undefined;
  #events: MessagesStreamEvent[] = [];
  #text: { index: number; block: { type: 'text'; text: string } } | undefined;

  constructor(
    private readonly ctx: { id: string; model: string },
    private readonly streaming: boolean,
  ) {
    this.#emit({
      type: 'message_start',
      message: {
        id: ctx.id,
        type: 'message',
        role: 'assistant',
        model: ctx.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: messageUsage(undefined),
      },
    });
  }

  drain(): MessagesStreamEvent[] {
    const events = this.#events;
    this.#events = [];
    return events;
  }

  listTools(): void {}

  approvalRequest(): void {}

  startCall(label: string, name: string, args: string): { finish(output: string | null, error: string | null): void } {
    const id = newId('mcptoolu_');
    this.#block({ type: 'mcp_tool_use', id, name, server_name: label, input: toolInputOf(args) }, args);
    return {
      finish: (output, error) => {
        this.#block({ type: 'mcp_tool_result', tool_use_id: id, is_error: error !== null, content: [{ type: 'text', text: error ?? output ?? '' }] });
      },
    };
  }

  functionCall(callId: string, name: string, args: string): void {
    this.#block({ type: 'tool_use', id: callId, name, input: toolInputOf(args) }, args);
  }

  textDelta(delta: string): void {
    if (!delta) return;
    if (!this.#text) {
      const block = { type: 'text' as const, text: '' };
      this.content.push(block);
      this.#text = { index: this.content.length - 1, block };
      this.#emit({ type: 'content_block_start', index: this.#text.index, content_block: { type: 'text', text: '' } });
    }
    this.#text.block.text += delta;
    this.#emit({ type: 'content_block_delta', index: this.#text.index, delta: { type: 'text_delta', text: delta } });
  }

  refusal(text: string): void {
    this.textDelta(text);
  }

  closeText(): void {
    if (!this.#text) return;
    this.#emit({ type: 'content_block_stop', index: this.#text.index });
    this.#text = undefined;
  }

  finish(finish: FinishReason | null, usage: Usage | undefined): void {
    this.closeText();
    const stopReason = stopReasonOf(finish);
    this.message = {
      id: this.ctx.id,
      type: 'message',
      role: 'assistant',
      model: this.ctx.model,
      content: this.content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage: messageUsage(usage),
    };
    this.#emit({ type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage?.completion_tokens ?? 0 } });
    this.#emit({ type: 'message_stop' });
  }

  fail(failure: StreamFailure): void {
    this.#emit({ type: 'error', error: { type: failure.status === 429 ? 'rate_limit_error' : 'api_error', message: failure.message } });
  }

  /** A whole block: start (input empty for a tool use, then its JSON as one delta), stop. */
  #block(block: Block, inputJson?: string): void {
    this.closeText();
    this.content.push(block);
    const index = this.content.length - 1;
    this.#emit({ type: 'content_block_start', index, content_block: inputJson === undefined ? block : { ...block, input: {} } });
    if (inputJson !== undefined) this.#emit({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: inputJson } });
    this.#emit({ type: 'content_block_stop', index });
  }

  #emit(event: MessagesStreamEvent): void {
    if (this.streaming) this.#events.push(event);
  }
}
