/**
 * Anthropic Messages request -> the unified chat request, for providers other than Anthropic.
 *
 * - `tool_result` blocks become `tool` messages placed before the rest of their user turn;
 *   an `is_error` result is prefixed with "Error: " (chat has no error flag).
 * - `thinking` and `redacted_thinking` blocks sent back in assistant turns are dropped: their
 *   signatures only mean something to Anthropic.
 * - `thinking` becomes `reasoning_effort` (budget < 4096: low, < 16384: medium, else high;
 *   `adaptive` and `disabled`: left to the provider); `output_config.effort` wins when set.
 * - `output_config.format` (structured output) becomes `response_format` json_schema.
 * - `top_k` is carried as `top_k`: the Anthropic, Gemini and Cohere adapters honour it, and an
 *   OpenAI-shaped provider refuses it by name rather than ignoring it.
 * - `metadata.user_id` becomes `user`; `stop_sequences` become `stop`.
 * - Block boundaries are kept: several text blocks (system, user, assistant, tool result)
 *   become several text parts, never one glued string.
 * - `cache_control` (top level, and on system, content and tool_result blocks and tools) is
 *   carried as the same field on the chat request, its parts and tools; the Anthropic and
 *   Bedrock adapters place it, the others drop it.
 * - Refused (400 naming the field): server tools (web search, code execution, bash, text
 *   editor, computer use, ...), documents other than base64 PDFs, block types other than
 *   text, image, document, tool_use and tool_result.
 */
import { badRequest } from '../../shared/errors';
import { parseInput } from '../../shared/validation';
import { compact } from '../../providers/_shared/openai-shape';
import type { ChatMessage, ChatRequest, ContentPart } from '../../providers/types';
import {
  customToolSchema,
  documentBlockSchema,
  imageBlockSchema,
  textBlockSchema,
  toolResultBlockSchema,
  toolUseBlockSchema,
  type MessagesBlock,
  type MessagesRequest,
} from './schema';

type ChatTool = NonNullable<ChatRequest['tools']>[number];
type ToolCall = NonNullable<Extract<ChatMessage, { role: 'assistant' }>['tool_calls']>[number];

function imagePart(block: MessagesBlock, where: string): ContentPart {
  const { source } = parseInput(imageBlockSchema, block, where);
  const url = source.type === 'base64' ? `data:${source.media_type};base64,${source.data}` : source.url;
  return { type: 'image_url', image_url: { url } };
}

function documentPart(block: MessagesBlock, where: string): ContentPart {
  const doc = parseInput(documentBlockSchema, block, where);
  const source = doc.source as { type: string; media_type?: string; data?: string };
  if (source.type !== 'base64' || source.media_type !== 'application/pdf' || typeof source.data !== 'string') {
    throw badRequest('Only base64 PDF documents can be translated for this provider.', `${where}.source`, 'unsupported_value');
  }
  return { type: 'file', file: compact({ file_data: `data:application/pdf;base64,${source.data}`, filename: doc.title ?? undefined }) };
}

/** The block's `cache_control` mark, carried on its chat part (the Anthropic and Bedrock adapters place it). */
function withCacheMark<T extends object>(part: T, block: object): T {
  const mark = (block as { cache_control?: unknown }).cache_control;
  return mark == null ? part : { ...part, cache_control: mark };
}

/** A user-side content block (text, image, document) as a chat content part. */
function userPart(block: MessagesBlock, where: string): ContentPart {
  switch (block.type) {
    case 'text':
      return withCacheMark({ type: 'text', text: parseInput(textBlockSchema, block, where).text }, block);
    case 'image':
      return withCacheMark(imagePart(block, where), block);
    case 'document':
      return withCacheMark(documentPart(block, where), block);
  }
  throw badRequest(`Content block type '${block.type}' is not supported on this provider.`, `${where}.type`, 'unsupported_value');
}

/**
 * One plain text block is a string; anything else stays parts, so block boundaries (and
 * cache marks) reach the provider: OpenAI-shaped ones take the parts, the others map them
 * to their own blocks or join them with a blank line.
 */
const simplify = (parts: ContentPart[]): string | ContentPart[] =>
  parts.length === 1 && parts[0]!.type === 'text' && (parts[0] as { cache_control?: unknown }).cache_control == null
    ? (parts[0] as { text: string }).text
    : parts;

function toolMessage(block: MessagesBlock, where: string): ChatMessage {
  const result = parseInput(toolResultBlockSchema, block, where);
  let content: string | ContentPart[] =
    typeof result.content === 'string' ? result.content : simplify((result.content ?? []).map((b, k) => userPart(b, `${where}.content[${k}]`)));
  if (result.is_error) content = typeof content === 'string' ? `Error: ${content}` : [{ type: 'text', text: 'Error:' }, ...content];
  return { role: 'tool', tool_call_id: result.tool_use_id, content };
}

function userMessages(content: string | MessagesBlock[], where: string): ChatMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const tools: ChatMessage[] = [];
  const parts: ContentPart[] = [];
  content.forEach((block, j) => {
    if (block.type === 'tool_result') tools.push(toolMessage(block, `${where}[${j}]`));
    else parts.push(userPart(block, `${where}[${j}]`));
  });
  // Chat wants tool results right after the assistant's calls, so they go first.
  return parts.length ? [...tools, { role: 'user', content: simplify(parts) }] : tools;
}

function assistantMessage(content: string | MessagesBlock[], where: string): ChatMessage {
  if (typeof content === 'string') return { role: 'assistant', content };
  const texts: ContentPart[] = [];
  const calls: ToolCall[] = [];
  content.forEach((block, j) => {
    const at = `${where}[${j}]`;
    switch (block.type) {
      case 'text':
        texts.push(withCacheMark({ type: 'text', text: parseInput(textBlockSchema, block, at).text }, block));
        return;
      case 'tool_use': {
        const use = parseInput(toolUseBlockSchema, block, at);
        calls.push({ id: use.id, type: 'function', function: { name: use.name, arguments: JSON.stringify(use.input) } });
        return;
      }
      case 'thinking':
      case 'redacted_thinking':
        return;
    }
    throw badRequest(`Content block type '${block.type}' is not supported in an assistant turn on this provider.`, `${at}.type`, 'unsupported_value');
  });
  const text = texts.length ? simplify(texts) : '';
  return calls.length ? { role: 'assistant', content: text || null, tool_calls: calls } : { role: 'assistant', content: text };
}

function systemMessage(system: MessagesRequest['system']): ChatMessage[] {
  if (system === undefined) return [];
  if (typeof system === 'string') return system ? [{ role: 'system', content: system }] : [];
  const parts = system.filter((b) => b.text).map((b) => withCacheMark<ContentPart>({ type: 'text', text: b.text }, b));
  return parts.length ? [{ role: 'system', content: simplify(parts) }] : [];
}

function toolsOf(tools: MessagesRequest['tools']): ChatTool[] | undefined {
  if (!tools?.length) return undefined;
  return tools.map((tool, i) => {
    if (tool.type != null && tool.type !== 'custom') {
      throw badRequest(
        `The Anthropic server tool '${tool.type}' (${tool.name}) is not available on this provider: only custom tools with an input_schema can be translated.`,
        `tools[${i}].type`,
        'unsupported_tool',
      );
    }
    const t = parseInput(customToolSchema, tool, `tools[${i}]`);
    return withCacheMark(
      { type: 'function', function: compact({ name: t.name, description: t.description, parameters: t.input_schema }) as ChatTool['function'] },
      t,
    );
  });
}

function toolChoiceOf(choice: MessagesRequest['tool_choice']): Pick<ChatRequest, 'tool_choice' | 'parallel_tool_calls'> {
  if (!choice) return {};
  const parallel = 'disable_parallel_tool_use' in choice && choice.disable_parallel_tool_use === true ? { parallel_tool_calls: false } : {};
  switch (choice.type) {
    case 'auto':
      return { tool_choice: 'auto', ...parallel };
    case 'any':
      return { tool_choice: 'required', ...parallel };
    case 'tool':
      return { tool_choice: { type: 'function', function: { name: choice.name } }, ...parallel };
    case 'none':
      return { tool_choice: 'none' };
  }
}

/** Reasoning effort for a thinking budget; thresholds split Anthropic's usual budgets in three. */
function effortOf(body: MessagesRequest): string | undefined {
  const effort = body.output_config?.effort;
  if (effort) return effort === 'max' ? 'xhigh' : effort;
  const thinking = body.thinking;
  if (thinking?.type !== 'enabled' || thinking.budget_tokens === undefined) return undefined;
  if (thinking.budget_tokens < 4096) return 'low';
  if (thinking.budget_tokens < 16384) return 'medium';
  return 'high';
}

export function messagesToChat(body: MessagesRequest): ChatRequest {
  const messages: ChatMessage[] = systemMessage(body.system);
  body.messages.forEach((m, i) => {
    const where = `messages[${i}].content`;
    if (m.role === 'user') messages.push(...userMessages(m.content, where));
    else messages.push(assistantMessage(m.content, where));
  });
  const tools = toolsOf(body.tools);
  const format = body.output_config?.format;
  return compact({
    model: body.model,
    messages,
    max_completion_tokens: body.max_tokens,
    stop: body.stop_sequences?.length ? body.stop_sequences : undefined,
    temperature: body.temperature,
    top_p: body.top_p,
    top_k: body.top_k,
    tools,
    ...(tools ? toolChoiceOf(body.tool_choice) : {}),
    response_format: format ? { type: 'json_schema', json_schema: { name: 'output', schema: format.schema } } : undefined,
    reasoning_effort: effortOf(body),
    user: body.metadata?.user_id ?? undefined,
    cache_control: body.cache_control ?? undefined,
    stream: body.stream === true || undefined,
    stream_options: body.stream === true ? { include_usage: true } : undefined,
  }) as ChatRequest;
}
