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

/** A user-side content block (text, image, document) as a chat content part. */
function userPart(block: MessagesBlock, where: string): ContentPart {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: parseInput(textBlockSchema, block, where).text };
    case 'image':
      return imagePart(block, where);
    case 'document':
      return documentPart(block, where);
  }
  throw badRequest(`Content block type '${block.type}' is not supported on this provider.`, `${where}.type`, 'unsupported_value');
}

const textOnly = (parts: ContentPart[]) => parts.every((p) => p.type === 'text');
const joinText = (parts: ContentPart[], separator = '') => parts.map((p) => (p as { text: string }).text).join(separator);
const simplify = (parts: ContentPart[]): string | ContentPart[] => (textOnly(parts) ? joinText(parts) : parts);

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
  const texts: string[] = [];
  const calls: ToolCall[] = [];
  content.forEach((block, j) => {
    const at = `${where}[${j}]`;
    switch (block.type) {
      case 'text':
        texts.push(parseInput(textBlockSchema, block, at).text);
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
  const text = texts.join('');
  return calls.length ? { role: 'assistant', content: text || null, tool_calls: calls } : { role: 'assistant', content: text };
}

function systemMessage(system: MessagesRequest['system']): ChatMessage[] {
  if (system === undefined) return [];
  const text = typeof system === 'string' ? system : system.map((b) => b.text).join('\n\n');
  return text ? [{ role: 'system', content: text }] : [];
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
    return { type: 'function', function: compact({ name: t.name, description: t.description, parameters: t.input_schema }) as ChatTool['function'] };
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
    stream: body.stream === true || undefined,
    stream_options: body.stream === true ? { include_usage: true } : undefined,
  }) as ChatRequest;
}
