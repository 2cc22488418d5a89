import type { ChatMessage, ChatRequest, ContentPart } from '../../providers/types';
import type { Message, Run, ToolCall, TruncationStrategy, Usage } from '../types';

/**
 * The chat request of one model call of a run (pure; context.ts loads the inputs):
 * system = the run's instructions (assistant or run override, plus additional_instructions,
 * joined when the run was created), then the thread's messages after truncation, then
 * this run's own earlier turns (assistant text + tool calls, and the submitted outputs).
 */

/** One earlier model call of this run that asked for tools, with the outputs given since. */
export interface RunTurn {
  /** Text the model wrote before its tool calls (a message of the run), if any. */
  text: string | null;
  toolCalls: Array<ToolCall & { output: string | null }>;
}

export interface RequestInput {
  run: Run;
  /** The thread's messages that are not this run's own, oldest first. */
  threadMessages: Message[];
  turns: RunTurn[];
  /** Usage of this run's committed calls (for the remaining completion budget). */
  used: Usage;
}

/** Rough token count for truncation only (4 characters a token, plus a per-message overhead). */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4) + 4;
}

/** Text of a message's content (text and refusal parts). */
export function messageText(m: Pick<Message, 'content'>): string {
  return m.content
    .map((part) => (part.type === 'text' ? part.text.value : part.type === 'refusal' ? part.refusal : ''))
    .filter(Boolean)
    .join('\n');
}

/**
 * truncation_strategy: `last_messages` keeps the N most recent messages;
 * `auto` keeps everything unless the run has `max_prompt_tokens`, then drops the oldest
 * messages whose estimated size does not fit in that budget (the newest is always kept).
 */
export function truncateMessages(messages: Message[], strategy: TruncationStrategy, maxPromptTokens: number | null): Message[] {
  if (strategy.type === 'last_messages') {
    const n = Math.max(1, strategy.last_messages ?? messages.length);
    return messages.slice(-n);
  }
  if (maxPromptTokens === null || messages.length === 0) return messages;
  let budget = maxPromptTokens;
  let start = messages.length;
  while (start > 0) {
    const cost = estimateTokens(messageText(messages[start - 1]!));
    if (start < messages.length && cost > budget) break;
    budget -= cost;
    start--;
  }
  return messages.slice(start);
}

/** A thread message as a chat message. Image files are not reachable by providers here: left out. */
export function toChatMessage(m: Message): ChatMessage {
  if (m.role === 'assistant') return { role: 'assistant', content: messageText(m) };
  const parts: ContentPart[] = [];
  for (const part of m.content) {
    if (part.type === 'text') parts.push({ type: 'text', text: part.text.value });
    else if (part.type === 'image_url') parts.push({ type: 'image_url', image_url: { url: part.image_url.url, detail: part.image_url.detail } });
  }
  const onlyText = parts.every((p) => p.type === 'text');
  return { role: 'user', content: onlyText ? parts.map((p) => (p as { text: string }).text).join('\n') : parts };
}

function turnMessages(turn: RunTurn): ChatMessage[] {
  const calls = turn.toolCalls.map(({ id, type, function: f }) => ({ id, type, function: { name: f.name, arguments: f.arguments } }));
  return [
    { role: 'assistant', content: turn.text || null, tool_calls: calls },
    ...turn.toolCalls.map((c): ChatMessage => ({ role: 'tool', tool_call_id: c.id, content: c.output ?? '' })),
  ];
}

/** The run's sampling and tool settings as chat request fields (defaults of 1 are left out). */
function settings(run: Run, used: Usage): Partial<ChatRequest> {
  const out: Partial<ChatRequest> = {};
  if (run.temperature !== null && run.temperature !== 1) out.temperature = run.temperature;
  if (run.top_p !== null && run.top_p !== 1) out.top_p = run.top_p;
  if (run.max_completion_tokens !== null) out.max_completion_tokens = Math.max(1, run.max_completion_tokens - used.completion_tokens);
  if (typeof run.response_format === 'object') out.response_format = run.response_format as ChatRequest['response_format'];
  if (run.tools.length) {
    out.tools = run.tools.map((t) => ({ type: 'function', function: { ...t.function, strict: t.function.strict ?? undefined } }));
    out.tool_choice = run.tool_choice;
    out.parallel_tool_calls = run.parallel_tool_calls;
  }
  return out;
}

export function buildChatRequest(input: RequestInput): ChatRequest {
  const { run } = input;
  const kept = truncateMessages(input.threadMessages, run.truncation_strategy, run.max_prompt_tokens);
  const messages: ChatMessage[] = [
    ...(run.instructions ? [{ role: 'system' as const, content: run.instructions }] : []),
    ...kept.map(toChatMessage),
    ...input.turns.flatMap(turnMessages),
  ];
  return {
    model: run.model,
    messages,
    ...settings(run, input.used),
    stream: true,
    stream_options: { include_usage: true },
  };
}
