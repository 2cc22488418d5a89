import type { RunBody } from './schemas';
import type { TemplateMessage } from './template';
import type { PromptVersion } from './types';

/**
 * The chat-completion request body of a rendered template: messages + model
 * + saved parameters + tools/functions, then the request's root-level hyperparameters,
 * which win over saved values (a whole key replaces the saved one; nothing is merged
 * deeply). `max_tokens` is deprecated: wherever it appears it becomes
 * `max_completion_tokens` (an explicit `max_completion_tokens` of the same source wins).
 */

export type ChatBody = Record<string, unknown> & { messages: TemplateMessage[] };

/** Keys of a render/run body that are not hyperparameters. */
const NOT_HYPERPARAMETERS = new Set(['variables', 'messages']);

function withMaxCompletionTokens(params: Record<string, unknown>): Record<string, unknown> {
  if (!('max_tokens' in params)) return params;
  const { max_tokens, ...rest } = params;
  return 'max_completion_tokens' in rest ? rest : { ...rest, max_completion_tokens: max_tokens };
}

const present = (v: unknown) => v !== null && v !== undefined && !(Array.isArray(v) && v.length === 0);

export function composeChatBody(version: PromptVersion, messages: TemplateMessage[], request: RunBody): ChatBody {
  const { messages: _ignored, ...saved } = withMaxCompletionTokens(version.parameters);
  const overrides = withMaxCompletionTokens(Object.fromEntries(Object.entries(request).filter(([k, v]) => !NOT_HYPERPARAMETERS.has(k) && v !== undefined)));
  const fromVersion: Record<string, unknown> = {};
  if (version.model) fromVersion.model = version.model;
  if (present(version.tools)) fromVersion.tools = version.tools;
  if (present(version.functions)) fromVersion.functions = version.functions;
  // OpenAI rejects a tool_choice without tools.
  if (present(version.tool_choice) && present(version.tools)) fromVersion.tool_choice = version.tool_choice;

  const merged: Record<string, unknown> = { ...saved, ...fromVersion, ...overrides };
  const { model, ...rest } = merged;
  return { ...(model !== undefined ? { model } : {}), messages, ...rest } as ChatBody;
}

/** The body sent through the chat pipeline: streaming options only when streaming. */
export function completionBody(data: ChatBody, stream: boolean): ChatBody {
  const { stream: _s, stream_options, ...rest } = data;
  return stream ? { ...rest, stream: true, ...(stream_options !== undefined ? { stream_options } : {}) } : (rest as ChatBody);
}
