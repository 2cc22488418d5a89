/** Unified chat completion -> Responses `response` object. */
import { newId } from '../../shared/ids';
import type { ChatCompletion, FinishReason, Usage } from '../../providers/types';
import type { ResponsesRequest } from './schema';
import type { FunctionCallItem, OutputItem, OutputMessage, ResponseObject, ResponsesUsage } from './types';

export const newResponseId = () => newId('resp_');
export const newMessageItemId = () => newId('msg_');
export const newFunctionCallItemId = () => newId('fc_');

/** What a response echoes besides its output: the request, its id and creation time. */
export interface ResponseContext {
  /** `resp_...`; see newResponseId. */
  id: string;
  /** Unix seconds. */
  createdAt: number;
  request: ResponsesRequest;
  /** The model as routed (the request may name none when a config sets it). */
  model: string;
}

export function responsesUsage(usage: Usage | undefined | null): ResponsesUsage | null {
  if (!usage) return null;
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0 },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: usage.completion_tokens_details?.reasoning_tokens ?? 0 },
    total_tokens: usage.total_tokens,
  };
}

/** `incomplete_details` for a finish reason, or null when the answer is whole. */
export function incompleteReason(finish: FinishReason | null | undefined): ResponseObject['incomplete_details'] {
  if (finish === 'length') return { reason: 'max_output_tokens' };
  if (finish === 'content_filter') return { reason: 'content_filter' };
  return null;
}

/** The response with no output yet (`in_progress`): what `response.created` carries. */
export function responseShell(ctx: ResponseContext): ResponseObject {
  const r = ctx.request;
  return {
    id: ctx.id,
    object: 'response',
    created_at: ctx.createdAt,
    status: 'in_progress',
    completed_at: null,
    error: null,
    incomplete_details: null,
    instructions: r.instructions ?? null,
    max_output_tokens: r.max_output_tokens ?? null,
    model: ctx.model,
    output: [],
    parallel_tool_calls: r.parallel_tool_calls ?? true,
    previous_response_id: r.previous_response_id ?? null,
    reasoning: { effort: r.reasoning?.effort ?? null, summary: r.reasoning?.summary ?? null },
    store: r.store ?? true,
    temperature: r.temperature ?? 1,
    text: { format: r.text?.format ?? { type: 'text' }, ...(r.text?.verbosity ? { verbosity: r.text.verbosity } : {}) },
    tool_choice: r.tool_choice ?? 'auto',
    tools: r.tools ?? [],
    top_p: r.top_p ?? 1,
    truncation: 'disabled',
    usage: null,
    user: r.user ?? null,
    metadata: r.metadata ?? {},
    background: false,
    service_tier: 'default',
  };
}

/** The finished response: `completed`, or `incomplete` when cut by max tokens or a filter. */
export function finishedResponse(
  ctx: ResponseContext,
  output: OutputItem[],
  finish: FinishReason | null | undefined,
  usage: Usage | undefined | null,
  now = Math.floor(Date.now() / 1000),
): ResponseObject {
  const incomplete = incompleteReason(finish);
  return {
    ...responseShell(ctx),
    status: incomplete ? 'incomplete' : 'completed',
    completed_at: incomplete ? null : now,
    incomplete_details: incomplete,
    output,
    usage: responsesUsage(usage),
  };
}

export function chatToResponse(completion: ChatCompletion, ctx: ResponseContext): ResponseObject {
  const choice = completion.choices[0];
  const output: OutputItem[] = [];
  const itemStatus = incompleteReason(choice?.finish_reason) ? 'incomplete' : 'completed';
  const message = choice?.message;
  const content: OutputMessage['content'] = [];
  if (message?.content) content.push({ type: 'output_text', text: message.content, annotations: [], logprobs: [] });
  if (message?.refusal) content.push({ type: 'refusal', refusal: message.refusal });
  if (content.length) output.push({ id: newMessageItemId(), type: 'message', status: itemStatus, role: 'assistant', content });
  for (const call of message?.tool_calls ?? []) {
    const item: FunctionCallItem = {
      id: newFunctionCallItemId(),
      type: 'function_call',
      status: itemStatus,
      call_id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
    };
    output.push(item);
  }
  return finishedResponse(ctx, output, choice?.finish_reason, completion.usage);
}
