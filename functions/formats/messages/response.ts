/** Unified chat completion -> Anthropic `message`. */
import { newId } from '../../shared/ids';
import type { ChatCompletion, FinishReason, Usage } from '../../providers/types';
import type { AnthropicMessage, ContentBlock, MessageUsage, StopReason } from './types';

export const newMessageId = () => newId('msg_');

export interface MessageContext {
  /** `msg_...`; see newMessageId. */
  id: string;
  /** The model as the caller named it (or as routed). */
  model: string;
}

export function stopReasonOf(finish: FinishReason | null | undefined): StopReason | null {
  switch (finish) {
    case 'stop':
      return 'end_turn';
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return null;
  }
}

/** Anthropic counts cache reads and writes apart from `input_tokens`; chat's prompt tokens include them. */
export function messageUsage(usage: Usage | undefined | null): MessageUsage {
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0;
  const written = usage?.prompt_tokens_details?.cache_write_tokens ?? 0;
  return {
    input_tokens: Math.max(0, (usage?.prompt_tokens ?? 0) - cached - written),
    output_tokens: usage?.completion_tokens ?? 0,
    cache_creation_input_tokens: written,
    cache_read_input_tokens: cached,
  };
}

/**
 * Tool input as an object. Arguments that are not a JSON object (a call cut short by
 * max tokens) become `{}`: Anthropic clients require an object there.
 */
export function toolInputOf(args: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(args || '{}');
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export function chatToMessage(completion: ChatCompletion, ctx: MessageContext): AnthropicMessage {
  const choice = completion.choices[0];
  const content: ContentBlock[] = [];
  const text = choice?.message.content || choice?.message.refusal;
  if (text) content.push({ type: 'text', text });
  for (const call of choice?.message.tool_calls ?? []) {
    content.push({ type: 'tool_use', id: call.id, name: call.function.name, input: toolInputOf(call.function.arguments) });
  }
  return {
    id: ctx.id,
    type: 'message',
    role: 'assistant',
    model: ctx.model,
    content,
    stop_reason: stopReasonOf(choice?.finish_reason),
    stop_sequence: null,
    usage: messageUsage(completion.usage),
  };
}
