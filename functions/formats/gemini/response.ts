/** Unified chat completion -> Gemini GenerateContentResponse. */
import type { ChatCompletion, FinishReason, Usage } from '../../providers/types';
import type { GeminiPart, GeminiResponse, GeminiUsage } from '../../providers/_shared/gemini/format';

export interface GeminiResponseContext {
  /** The model as the caller named it in the path (or as routed). */
  model: string;
  responseId: string;
}

/** Gemini's answer shape plus the fields the gateway adds (`modelVersion`). */
export type GeminiAnswer = GeminiResponse & { modelVersion: string; responseId: string };

/** A function call's tool calls end with STOP in Gemini, as a normal answer does. */
export function finishReasonOf(finish: FinishReason | null | undefined): string | undefined {
  switch (finish) {
    case 'stop':
    case 'tool_calls':
    case 'function_call':
      return 'STOP';
    case 'length':
      return 'MAX_TOKENS';
    case 'content_filter':
      return 'SAFETY';
    default:
      return finish ? 'OTHER' : undefined;
  }
}

/**
 * Gemini counts cached tokens inside `promptTokenCount` (as OpenAI does) and thoughts apart
 * from `candidatesTokenCount` (OpenAI's completion tokens include reasoning).
 */
export function usageMetadataOf(usage: Usage | undefined | null): GeminiUsage {
  const reasoning = usage?.completion_tokens_details?.reasoning_tokens ?? 0;
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0;
  const prompt = usage?.prompt_tokens ?? 0;
  const completion = usage?.completion_tokens ?? 0;
  return {
    promptTokenCount: prompt,
    candidatesTokenCount: Math.max(0, completion - reasoning),
    totalTokenCount: usage?.total_tokens ?? prompt + completion,
    ...(reasoning ? { thoughtsTokenCount: reasoning } : {}),
    ...(cached ? { cachedContentTokenCount: cached } : {}),
  };
}

/** Tool call arguments as the object Gemini sends; arguments cut short (max tokens) become `{}`. */
export function argsOf(args: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(args || '{}');
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export function functionCallPart(call: { id: string; name: string; arguments: string }): GeminiPart {
  return { functionCall: { id: call.id, name: call.name, args: argsOf(call.arguments) } };
}

export function chatToGemini(completion: ChatCompletion, ctx: GeminiResponseContext): GeminiAnswer {
  const choice = completion.choices[0];
  const parts: GeminiPart[] = [];
  const text = choice?.message.content || choice?.message.refusal;
  if (text) parts.push({ text });
  for (const call of choice?.message.tool_calls ?? []) parts.push(functionCallPart({ id: call.id, ...call.function }));
  const finishReason = finishReasonOf(choice?.finish_reason);
  return {
    candidates: [{ content: { role: 'model', parts }, ...(finishReason ? { finishReason } : {}), index: 0 }],
    usageMetadata: usageMetadataOf(completion.usage),
    modelVersion: ctx.model,
    responseId: ctx.responseId,
  };
}
