/**
 * Unified chat chunks -> Gemini `streamGenerateContent?alt=sse` events: each event a whole
 * GenerateContentResponse holding only the new parts. Text goes out as it arrives; function
 * calls go out whole (Gemini never splits one), so their argument fragments are buffered
 * and the calls sent with the last event, which carries `finishReason` and `usageMetadata`
 * (usage comes last on chat streams). A failure after the stream began ends it with an
 * `{error:{code,message,status}}` event, as Google ends a stream that fails.
 */
import type { ChatCompletionChunk, FinishReason, Usage } from '../../providers/types';
import type { GeminiPart } from '../../providers/_shared/gemini/format';
import type { StreamFailure } from '../sse';
import { googleErrorBody, type GoogleErrorBody } from './errors';
import { finishReasonOf, functionCallPart, usageMetadataOf, type GeminiAnswer, type GeminiResponseContext } from './response';

export type GeminiStreamEvent = GeminiAnswer | GoogleErrorBody;

/** SSE framing of the Gemini API: `data:` lines only, no event names, no `[DONE]`. */
export const geminiFrame = (event: GeminiStreamEvent): string => `data: ${JSON.stringify(event)}\n\n`;

export class GeminiStreamEncoder {
  #ended = false;
  #calls = new Map<number, { id: string; name: string; arguments: string }>();
  #finish: FinishReason | null = null;
  #usage: Usage | undefined;
  #text = '';

  constructor(private readonly ctx: GeminiResponseContext) {}

  /** All the text sent so far (for tests and logs). */
  get text(): string {
    return this.#text;
  }

  push(chunk: ChatCompletionChunk): GeminiStreamEvent[] {
    if (this.#ended) return [];
    if (chunk.usage) this.#usage = chunk.usage;
    const choice = chunk.choices.find((c) => c.index === 0);
    if (!choice) return [];
    if (choice.finish_reason) this.#finish = choice.finish_reason;
    for (const delta of choice.delta.tool_calls ?? []) {
      const call = this.#calls.get(delta.index) ?? { id: '', name: '', arguments: '' };
      if (delta.id) call.id = delta.id;
      if (delta.function?.name) call.name = delta.function.name;
      if (delta.function?.arguments) call.arguments += delta.function.arguments;
      this.#calls.set(delta.index, call);
    }
    const text = choice.delta.content;
    if (!text) return [];
    this.#text += text;
    return [this.#event([{ text }])];
  }

  end(): GeminiStreamEvent[] {
    if (this.#ended) return [];
    this.#ended = true;
    const calls = [...this.#calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => functionCallPart(call));
    const finishReason = finishReasonOf(this.#finish) ?? 'STOP';
    return [{ ...this.#event(calls, finishReason), usageMetadata: usageMetadataOf(this.#usage) }];
  }

  fail(failure: StreamFailure): GeminiStreamEvent[] {
    if (this.#ended) return [];
    this.#ended = true;
    return [googleErrorBody({ status: failure.status ?? 500, message: failure.message })];
  }

  #event(parts: GeminiPart[], finishReason?: string): GeminiAnswer {
    return {
      candidates: [{ content: { role: 'model', parts }, ...(finishReason ? { finishReason } : {}), index: 0 }],
      modelVersion: this.ctx.model,
      responseId: this.ctx.responseId,
    };
  }
}
