/**
 * Unified chat chunks -> the Responses event stream. Feed chunks with `push`, then call
 * `end` (clean end of the upstream) or `fail` (a failure after the stream began); each
 * returns the events to send, in order, numbered by `sequence_number`. Frame them with
 * sseFrame. The event order is the one the openai SDK's ResponseStream and the AI SDK's
 * Responses model accumulate: created, in_progress, then per output item added ->
 * (content_part.added -> output_text.delta* -> output_text.done -> content_part.done |
 * function_call_arguments.delta* -> .done) -> output_item.done, then completed or
 * incomplete. A failure sends `error` then `response.failed`, never a completion.
 *
 * Function calls stay open until the end, so argument fragments of several calls may
 * interleave; text closes when a call starts (later text opens a new message item).
 */
import type { ChatCompletionChunk, FinishReason, Usage } from '../../providers/types';
import type { StreamFailure } from '../sse';
import { finishedResponse, newFunctionCallItemId, newMessageItemId, responseShell, type ResponseContext } from './response';
import type { FunctionCallItem, OutputItem, OutputMessage, OutputText, ResponseObject, ResponsesStreamEvent } from './types';

type OpenMessage = { outputIndex: number; item: OutputMessage; text: string };
type OpenCall = { outputIndex?: number; item: FunctionCallItem; pending: string[] };

export class ResponsesStreamEncoder {
  #seq = 0;
  #state: 'new' | 'streaming' | 'ended' = 'new';
  #output: Array<OutputMessage | FunctionCallItem> = [];
  #message: OpenMessage | undefined;
  /** By the chat tool-call `index`. */
  #calls = new Map<number, OpenCall>();
  #finish: FinishReason | null = null;
  #usage: Usage | undefined;
  #final: ResponseObject | undefined;

  constructor(private readonly ctx: ResponseContext) {}

  /** The finished (or failed) response, once `end` or `fail` ran: what a store keeps. */
  get response(): ResponseObject | undefined {
    return this.#final;
  }

  /** `response.created` and `response.in_progress`; `push` sends them first if not yet sent. */
  start(): ResponsesStreamEvent[] {
    if (this.#state !== 'new') return [];
    this.#state = 'streaming';
    const shell = responseShell(this.ctx);
    return [this.#event('response.created', { response: shell }), this.#event('response.in_progress', { response: shell })];
  }

  push(chunk: ChatCompletionChunk): ResponsesStreamEvent[] {
    if (this.#state === 'ended') return [];
    const out = this.start();
    if (chunk.usage) this.#usage = chunk.usage;
    const choice = chunk.choices.find((c) => c.index === 0);
    if (!choice) return out;
    if (choice.delta.content) out.push(...this.#text(choice.delta.content));
    for (const call of choice.delta.tool_calls ?? []) out.push(...this.#toolCall(call));
    if (choice.finish_reason) this.#finish = choice.finish_reason;
    return out;
  }

  /** The upstream ended cleanly: close every open item and complete the response. */
  end(): ResponsesStreamEvent[] {
    if (this.#state === 'ended') return [];
    const out = this.start();
    const status = this.#finish === 'length' || this.#finish === 'content_filter' ? 'incomplete' : 'completed';
    out.push(...this.#closeMessage(status));
    for (const call of this.#callsInOrder()) out.push(...this.#closeCall(call, status));
    this.#state = 'ended';
    this.#final = finishedResponse(this.ctx, this.#outputInOrder(), this.#finish, this.#usage);
    out.push(this.#event(this.#final.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: this.#final }));
    return out;
  }

  /**
   * The upstream failed mid-stream. `error` carries a top-level `error` object as well as
   * the documented `code`/`message`/`param`, so the openai SDK raises it instead of
   * resolving a half-built response.
   */
  fail(failure: StreamFailure): ResponsesStreamEvent[] {
    if (this.#state === 'ended') return [];
    const out = this.start();
    this.#state = 'ended';
    const code = failure.code ?? (failure.status === 429 ? 'rate_limit_exceeded' : 'server_error');
    for (const item of this.#output) if (item.status === 'in_progress') item.status = 'incomplete';
    if (this.#message) this.#message.item.content = this.#messageContent(this.#message);
    for (const call of this.#calls.values()) call.item.arguments += call.pending.join('');
    this.#final = {
      ...responseShell(this.ctx),
      status: 'failed',
      error: { code, message: failure.message },
      output: this.#outputInOrder(),
      usage: null,
    };
    out.push(
      this.#event('error', {
        code,
        message: failure.message,
        param: failure.param ?? null,
        error: { type: failure.type ?? 'server_error', code, message: failure.message, param: failure.param ?? null },
      }),
      this.#event('response.failed', { response: this.#final }),
    );
    return out;
  }

  #event(type: string, body: Record<string, unknown>): ResponsesStreamEvent {
    return { type, sequence_number: this.#seq++, ...body };
  }

  #text(delta: string): ResponsesStreamEvent[] {
    const out: ResponsesStreamEvent[] = [];
    let message = this.#message;
    if (!message) {
      const item: OutputMessage = { id: newMessageItemId(), type: 'message', status: 'in_progress', role: 'assistant', content: [] };
      message = this.#message = { outputIndex: this.#output.length, item, text: '' };
      this.#output.push(item);
      out.push(this.#event('response.output_item.added', { output_index: message.outputIndex, item: structuredClone(item) }));
      out.push(this.#event('response.content_part.added', { ...this.#partRef(message), part: outputText('') }));
    }
    message.text += delta;
    out.push(this.#event('response.output_text.delta', { ...this.#partRef(message), delta, logprobs: [] }));
    return out;
  }

  #toolCall(delta: NonNullable<ChatCompletionChunk['choices'][number]['delta']['tool_calls']>[number]): ResponsesStreamEvent[] {
    const out: ResponsesStreamEvent[] = [];
    let call = this.#calls.get(delta.index);
    if (!call) {
      const item: FunctionCallItem = { id: newFunctionCallItemId(), type: 'function_call', status: 'in_progress', call_id: '', name: '', arguments: '' };
      call = { item, pending: [] };
      this.#calls.set(delta.index, call);
    }
    if (delta.id) call.item.call_id = delta.id;
    if (delta.function?.name) call.item.name = delta.function.name;
    if (delta.function?.arguments) call.pending.push(delta.function.arguments);
    // The item is announced once its name is known (clients key tool calls on it).
    if (call.outputIndex === undefined && call.item.name) out.push(...this.#openCall(call));
    if (call.outputIndex !== undefined) out.push(...this.#flushArguments(call));
    return out;
  }

  #openCall(call: OpenCall): ResponsesStreamEvent[] {
    const out = this.#closeMessage('completed');
    call.outputIndex = this.#output.length;
    this.#output.push(call.item);
    out.push(this.#event('response.output_item.added', { output_index: call.outputIndex, item: structuredClone(call.item) }));
    return out;
  }

  #flushArguments(call: OpenCall): ResponsesStreamEvent[] {
    const out = call.pending.map((delta) => {
      call.item.arguments += delta;
      return this.#event('response.function_call_arguments.delta', { item_id: call.item.id, output_index: call.outputIndex, delta });
    });
    call.pending = [];
    return out;
  }

  #closeCall(call: OpenCall, status: 'completed' | 'incomplete'): ResponsesStreamEvent[] {
    const out = call.outputIndex === undefined ? this.#openCall(call) : [];
    out.push(...this.#flushArguments(call));
    call.item.status = status;
    out.push(
      this.#event('response.function_call_arguments.done', {
        item_id: call.item.id,
        output_index: call.outputIndex,
        name: call.item.name,
        arguments: call.item.arguments,
      }),
      this.#event('response.output_item.done', { output_index: call.outputIndex, item: structuredClone(call.item) }),
    );
    return out;
  }

  #closeMessage(status: 'completed' | 'incomplete'): ResponsesStreamEvent[] {
    const message = this.#message;
    if (!message) return [];
    this.#message = undefined;
    const part = outputText(message.text);
    message.item.content = [part];
    message.item.status = status;
    return [
      this.#event('response.output_text.done', { ...this.#partRef(message), text: message.text, logprobs: [] }),
      this.#event('response.content_part.done', { ...this.#partRef(message), part }),
      this.#event('response.output_item.done', { output_index: message.outputIndex, item: structuredClone(message.item) }),
    ];
  }

  #messageContent(message: OpenMessage): OutputText[] {
    return [outputText(message.text)];
  }

  #partRef(message: OpenMessage) {
    return { item_id: message.item.id, output_index: message.outputIndex, content_index: 0 };
  }

  /** Calls in the order they were announced; never-announced ones (no name) last. */
  #callsInOrder(): OpenCall[] {
    return [...this.#calls.values()].sort((a, b) => (a.outputIndex ?? Infinity) - (b.outputIndex ?? Infinity));
  }

  #outputInOrder(): OutputItem[] {
    return this.#output.map((item) => structuredClone(item));
  }
}

const outputText = (text: string): OutputText => ({ type: 'output_text', text, annotations: [], logprobs: [] });
