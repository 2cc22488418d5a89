/**
 * Unified chat chunks -> Anthropic Messages stream events. Feed chunks with `push`, then
 * call `end` (clean end) or `fail` (failure after the stream began); each returns the events
 * to send in order. Frame them with sseFrame (the `event:` line is required by the SDK).
 *
 * Order: message_start, then content blocks one at a time (content_block_start ->
 * content_block_delta* -> content_block_stop, indexes 0, 1, ...), message_delta (stop_reason,
 * usage), message_stop. A failure sends an `error` event and no message_stop.
 *
 * Anthropic blocks never overlap while chat tool calls may interleave, so only one block
 * streams live. A tool call that starts while another call's arguments are not yet a whole
 * JSON object waits (its fragments buffered) and is sent once the open call is whole, or at
 * the end; text that arrives meanwhile waits the same way. Sequential calls, the usual
 * case, stream live.
 *
 * Usage arrives last on chat streams, so message_start reports 0 tokens and message_delta
 * carries the input and output totals.
 */
import type { ChatCompletionChunk, FinishReason, Usage } from '../../providers/types';
import type { StreamFailure } from '../sse';
import { anthropicErrorBody } from './errors';
import { messageUsage, stopReasonOf, toolInputOf, type MessageContext } from './response';
import type { AnthropicMessage, ContentBlock, MessagesStreamEvent } from './types';

type Call = { id: string; name: string; args: string; sent: number; state: 'unnamed' | 'queued' | 'open' | 'closed' };
type Open = { kind: 'text'; index: number; text: string } | { kind: 'tool'; index: number; call: Call };
type Waiting = { kind: 'text'; text: string } | { kind: 'tool'; call: Call };
type ToolCallDelta = NonNullable<ChatCompletionChunk['choices'][number]['delta']['tool_calls']>[number];

export class MessagesStreamEncoder {
  #state: 'new' | 'streaming' | 'ended' = 'new';
  #nextIndex = 0;
  #open: Open | undefined;
  #waiting: Waiting[] = [];
  #calls = new Map<number, Call>();
  #content: ContentBlock[] = [];
  #finish: FinishReason | null = null;
  #usage: Usage | undefined;
  #final: AnthropicMessage | undefined;

  constructor(private readonly ctx: MessageContext) {}

  /** The finished message once `end` ran (for logs and tests). */
  get message(): AnthropicMessage | undefined {
    return this.#final;
  }

  /** `message_start`; `push` sends it first if not yet sent. */
  start(): MessagesStreamEvent[] {
    if (this.#state !== 'new') return [];
    this.#state = 'streaming';
    const message: AnthropicMessage = { ...this.#shell(), content: [], stop_reason: null, usage: messageUsage(undefined) };
    return [{ type: 'message_start', message }];
  }

  push(chunk: ChatCompletionChunk): MessagesStreamEvent[] {
    if (this.#state === 'ended') return [];
    const out = this.start();
    if (chunk.usage) this.#usage = chunk.usage;
    const choice = chunk.choices.find((c) => c.index === 0);
    if (!choice) return out;
    if (choice.delta.content) out.push(...this.#text(choice.delta.content));
    for (const delta of choice.delta.tool_calls ?? []) out.push(...this.#toolCall(delta));
    if (choice.finish_reason) this.#finish = choice.finish_reason;
    return out;
  }

  end(): MessagesStreamEvent[] {
    if (this.#state === 'ended') return [];
    const out = this.start();
    this.#state = 'ended';
    out.push(...this.#close());
    for (const call of this.#calls.values()) if (call.state === 'unnamed') this.#waiting.push({ kind: 'tool', call });
    for (const next of this.#waiting.splice(0)) out.push(...this.#openWaiting(next), ...this.#close());
    const usage = messageUsage(this.#usage);
    this.#final = { ...this.#shell(), content: this.#content, stop_reason: stopReasonOf(this.#finish), usage };
    out.push(
      {
        type: 'message_delta',
        delta: { stop_reason: this.#final.stop_reason, stop_sequence: null },
        usage: {
          output_tokens: usage.output_tokens,
          input_tokens: usage.input_tokens,
          cache_creation_input_tokens: usage.cache_creation_input_tokens,
          cache_read_input_tokens: usage.cache_read_input_tokens,
        },
      },
      { type: 'message_stop' },
    );
    return out;
  }

  fail(failure: StreamFailure): MessagesStreamEvent[] {
    if (this.#state === 'ended') return [];
    const out = this.start();
    this.#state = 'ended';
    out.push({ ...anthropicErrorBody(failure) });
    return out;
  }

  #shell() {
    return { id: this.ctx.id, type: 'message' as const, role: 'assistant' as const, model: this.ctx.model, stop_sequence: null };
  }

  #text(text: string): MessagesStreamEvent[] {
    const open = this.#open;
    if (open?.kind === 'text') {
      open.text += text;
      return [textDelta(open.index, text)];
    }
    if (open && !isWholeObject(open.call.args)) {
      const last = this.#waiting.at(-1);
      if (last?.kind === 'text') last.text += text;
      else this.#waiting.push({ kind: 'text', text });
      return [];
    }
    return [...this.#close(), ...this.#openWaiting({ kind: 'text', text })];
  }

  #toolCall(delta: ToolCallDelta): MessagesStreamEvent[] {
    let call = this.#calls.get(delta.index);
    if (!call) {
      call = { id: '', name: '', args: '', sent: 0, state: 'unnamed' };
      this.#calls.set(delta.index, call);
    }
    if (delta.id) call.id = delta.id;
    if (delta.function?.name) call.name = delta.function.name;
    if (delta.function?.arguments) call.args += delta.function.arguments;
    const out: MessagesStreamEvent[] = [];
    if (call.state === 'unnamed' && call.name) {
      call.state = 'queued';
      this.#waiting.push({ kind: 'tool', call });
    }
    if (call.state === 'open') out.push(...this.#sendArgs(call));
    out.push(...this.#advance());
    return out;
  }

  /** Open what waits while nothing streams or the open call is whole. */
  #advance(): MessagesStreamEvent[] {
    const out: MessagesStreamEvent[] = [];
    while (this.#waiting.length) {
      const open = this.#open;
      if (open?.kind === 'tool' && !isWholeObject(open.call.args)) break;
      out.push(...this.#close(), ...this.#openWaiting(this.#waiting.shift()!));
    }
    return out;
  }

  #openWaiting(next: Waiting): MessagesStreamEvent[] {
    const index = this.#nextIndex++;
    if (next.kind === 'text') {
      this.#open = { kind: 'text', index, text: next.text };
      return [{ type: 'content_block_start', index, content_block: { type: 'text', text: '' } }, textDelta(index, next.text)];
    }
    const call = next.call;
    call.state = 'open';
    this.#open = { kind: 'tool', index, call };
    return [{ type: 'content_block_start', index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } }, ...this.#sendArgs(call)];
  }

  #sendArgs(call: Call): MessagesStreamEvent[] {
    if (call.sent === call.args.length || this.#open?.kind !== 'tool') return [];
    const partial = call.args.slice(call.sent);
    call.sent = call.args.length;
    return [{ type: 'content_block_delta', index: this.#open.index, delta: { type: 'input_json_delta', partial_json: partial } }];
  }

  #close(): MessagesStreamEvent[] {
    const open = this.#open;
    if (!open) return [];
    this.#open = undefined;
    if (open.kind === 'text') this.#content.push({ type: 'text', text: open.text });
    else {
      open.call.state = 'closed';
      this.#content.push({ type: 'tool_use', id: open.call.id, name: open.call.name, input: toolInputOf(open.call.args) });
    }
    return [{ type: 'content_block_stop', index: open.index }];
  }
}

const textDelta = (index: number, text: string): MessagesStreamEvent => ({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } });

function isWholeObject(args: string): boolean {
  if (!args.trimEnd().endsWith('}')) return false;
  try {
    const v: unknown = JSON.parse(args);
    return typeof v === 'object' && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}
