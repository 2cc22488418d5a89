/**
 * Gemini `streamGenerateContent?alt=sse` -> OpenAI chunks (Developer API and Vertex AI).
 * Each SSE event is a whole GenerateContentResponse holding only the new parts; events
 * may be separated by `\r\n\r\n` (Vertex). There is no `[DONE]`: the end of the body ends
 * the stream, and the finish_reason and usage chunks are emitted then: some answers put a
 * finishReason on every event, and OpenAI clients take the first one as the end.
 */
import { choiceChunk, streamErrorFrom } from '../cloud-common';
import { candidateOutput, finishReasonOf, usageOf, type GeminiResponse } from './format';
import { invalidChunk, parseJson, usageChunk } from '../openai-shape';
import { sseTranslator } from '../sse';
import type { ChatCompletionChunk, StreamTranslator, TranslateContext, Usage } from '../../types';

type Delta = ChatCompletionChunk['choices'][number]['delta'];

export function geminiStream(ctx: TranslateContext): StreamTranslator {
  let usage: Usage | undefined;
  const started = new Set<number>();
  /** Per choice: tool calls emitted so far (the next OpenAI tool_calls[].index). */
  const toolCounts = new Map<number, number>();
  const finished = new Set<number>();
  /** Per choice: the latest finishReason, reported when the stream ends. */
  const finishReasons = new Map<number, string>();

  const roleFirst = (index: number, delta: Delta): Delta => {
    if (started.has(index)) return delta;
    started.add(index);
    return { role: 'assistant', ...delta };
  };

  return sseTranslator({
    usage: () => usage,
    event(ev, out) {
      const parsed = parseJson(ev.data);
      if (!parsed) {
        out.error = invalidChunk('Gemini');
        return;
      }
      if (parsed.error) {
        out.error = streamErrorFrom(parsed, 500);
        return;
      }
      const res = parsed as GeminiResponse;
      if (res.usageMetadata) usage = usageOf(res.usageMetadata);
      const candidates = res.candidates ?? [];
      if (candidates.length === 0 && res.promptFeedback?.blockReason && !finished.has(0)) {
        finished.add(0);
        out.chunks.push(choiceChunk(ctx, roleFirst(0, {}), 'content_filter', 0));
        return;
      }
      candidates.forEach((c, i) => {
        const index = c.index ?? i;
        const { text, toolCalls } = candidateOutput(c);
        const delta: Delta = {};
        if (text) delta.content = text;
        if (toolCalls.length) {
          const before = toolCounts.get(index) ?? 0;
          delta.tool_calls = toolCalls.map((call, k) => ({ index: before + k, ...call }));
          toolCounts.set(index, before + toolCalls.length);
        }
        if (text || toolCalls.length) out.chunks.push(choiceChunk(ctx, roleFirst(index, delta), null, index));
        if (c.finishReason) finishReasons.set(index, c.finishReason);
      });
    },
    finish(out) {
      for (const [index, finishReason] of finishReasons) {
        if (finished.has(index)) continue;
        finished.add(index);
        const reason = toolCounts.get(index) ? 'tool_calls' : finishReasonOf(finishReason);
        out.chunks.push(choiceChunk(ctx, roleFirst(index, {}), reason, index));
      }
      if (usage && ctx.includeUsage) out.chunks.push(usageChunk(ctx, usage));
    },
  });
}
