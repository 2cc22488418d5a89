/**
 * Responses request -> the unified chat request, for providers without a Responses API.
 *
 * Refused with a 400 naming the field: built-in tools (web search, file search, code
 * interpreter, computer use, MCP, image generation, shells, custom tools), input item types
 * other than messages and function calls/outputs, images given by `file_id`, files by URL.
 * Dropped: `reasoning` items passed back as input (their encrypted content only means
 * something to OpenAI), `reasoning.summary`, item `id`s and `status`es, and request fields
 * about OpenAI's own service (`include`, `truncation`, `service_tier`, `store`, ...).
 */
import { badRequest } from '../../shared/errors';
import { parseInput } from '../../shared/validation';
import { compact } from '../../providers/_shared/openai-shape';
import type { ChatMessage, ChatRequest, ContentPart } from '../../providers/types';
import {
  functionCallItemSchema,
  functionCallOutputItemSchema,
  functionToolSchema,
  jsonSchemaFormatSchema,
  messageItemSchema,
  type ResponsesContentPart,
  type ResponsesItem,
  type ResponsesRequest,
} from './schema';
import type { OutputItem } from './types';

type ChatTool = NonNullable<ChatRequest['tools']>[number];
/** An input item, or an output item of an earlier response (stored for previous_response_id). */
export type ConversationItem = ResponsesItem | OutputItem;
type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;

/** The input as a list of items (a string input is one user message). */
export function inputItemsOf(body: Pick<ResponsesRequest, 'input'>): ResponsesItem[] {
  if (body.input === undefined) return [];
  if (typeof body.input === 'string') {
    return [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: body.input }] }];
  }
  return body.input;
}

function partOf(part: ResponsesContentPart, where: string, assistant: boolean): ContentPart {
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: part.text };
    case 'refusal':
      return { type: 'text', text: part.refusal };
    case 'input_image':
      if (assistant) break;
      if (!part.image_url) {
        throw badRequest(
          'Images must be given as `image_url` (an http(s) or data URL) on this provider; `file_id` is not supported.',
          `${where}.image_url`,
          'unsupported_value',
        );
      }
      return { type: 'image_url', image_url: part.detail ? { url: part.image_url, detail: part.detail } : { url: part.image_url } };
    case 'input_file':
      if (assistant) break;
      if (part.file_url) {
        throw badRequest('Files must be given inline as `file_data` on this provider; `file_url` is not supported.', `${where}.file_url`, 'unsupported_value');
      }
      if (!part.file_data && !part.file_id) throw badRequest('`input_file` needs `file_data` or `file_id`.', where, 'invalid_value');
      return { type: 'file', file: compact({ file_data: part.file_data, file_id: part.file_id, filename: part.filename }) };
  }
  throw badRequest(`Content part type '${part.type}' is not allowed in an assistant message.`, `${where}.type`, 'invalid_value');
}

const textOnly = (content: string | ContentPart[]) => typeof content === 'string' || content.every((p) => p.type === 'text');

/**
 * One text part is a string; several parts stay parts, so their boundaries reach the
 * provider (OpenAI-shaped ones take parts; the others map or join them with a blank line).
 */
function contentOf(content: string | ResponsesContentPart[], where: string, assistant: boolean): string | ContentPart[] {
  if (typeof content === 'string') return content;
  const parts = content.map((p, j) => partOf(p, `${where}[${j}]`, assistant));
  return parts.length === 1 && parts[0]!.type === 'text' ? (parts[0] as { text: string }).text : parts;
}

/** The last chat message when it is an assistant turn a function call can join. */
function openAssistantTurn(messages: ChatMessage[]): AssistantMessage | undefined {
  const last = messages.at(-1);
  return last?.role === 'assistant' ? last : undefined;
}

function appendItem(messages: ChatMessage[], item: ConversationItem, where: string): void {
  switch (item.type ?? 'message') {
    case 'message': {
      const m = parseInput(messageItemSchema, item, where);
      const content = contentOf(m.content, `${where}.content`, m.role === 'assistant');
      if (m.role === 'assistant') {
        messages.push({ role: 'assistant', content });
      } else if ((m.role === 'system' || m.role === 'developer') && !textOnly(content)) {
        throw badRequest(`A ${m.role} message may hold text only.`, `${where}.content`, 'invalid_value');
      } else {
        messages.push({ role: m.role, content } as ChatMessage);
      }
      return;
    }
    case 'function_call': {
      const call = parseInput(functionCallItemSchema, item, where);
      const toolCall = { id: call.call_id, type: 'function' as const, function: { name: call.name, arguments: call.arguments } };
      // Consecutive function calls (after optional text) are one assistant turn in chat.
      const turn = openAssistantTurn(messages);
      if (turn) turn.tool_calls = [...(turn.tool_calls ?? []), toolCall];
      else messages.push({ role: 'assistant', content: null, tool_calls: [toolCall] });
      return;
    }
    case 'function_call_output': {
      const out = parseInput(functionCallOutputItemSchema, item, where);
      messages.push({ role: 'tool', tool_call_id: out.call_id, content: contentOf(out.output, `${where}.output`, false) });
      return;
    }
    case 'reasoning':
      return;
    default:
      throw badRequest(
        `Input item type '${item.type}' is not supported on this provider: send messages, function_call and function_call_output items.`,
        `${where}.type`,
        'unsupported_value',
      );
  }
}

function toolsOf(tools: ResponsesRequest['tools']): ChatTool[] | undefined {
  if (!tools?.length) return undefined;
  return tools.map((tool, i) => {
    if (tool.type !== 'function') {
      throw badRequest(
        `The built-in tool '${tool.type}' is not available on this provider: only function tools can be translated.`,
        `tools[${i}].type`,
        'unsupported_tool',
      );
    }
    const t = parseInput(functionToolSchema, tool, `tools[${i}]`);
    return {
      type: 'function',
      function: compact({ name: t.name, description: t.description, parameters: t.parameters, strict: t.strict }) as ChatTool['function'],
    };
  });
}

type ToolChoice = { tool_choice?: ChatRequest['tool_choice']; allowed?: string[] };

function toolChoiceOf(choice: ResponsesRequest['tool_choice']): ToolChoice {
  if (choice === undefined) return {};
  if (typeof choice === 'string') return { tool_choice: choice };
  if (choice.type === 'function' && typeof choice.name === 'string') {
    return { tool_choice: { type: 'function', function: { name: choice.name } } };
  }
  if (choice.type === 'allowed_tools' && Array.isArray(choice.tools) && (choice.mode === 'auto' || choice.mode === 'required')) {
    const names = (choice.tools as Array<{ type?: string; name?: string }>).map((t, i) => {
      if (t.type !== 'function' || typeof t.name !== 'string') {
        throw badRequest('Only function tools can be allowed on this provider.', `tool_choice.tools[${i}]`, 'unsupported_tool');
      }
      return t.name;
    });
    return { tool_choice: choice.mode, allowed: names };
  }
  throw badRequest(`tool_choice of type '${choice.type}' is not available on this provider.`, 'tool_choice.type', 'unsupported_tool');
}

function responseFormatOf(text: ResponsesRequest['text']): ChatRequest['response_format'] {
  const format = text?.format;
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  const f = parseInput(jsonSchemaFormatSchema, format, 'text.format');
  return {
    type: 'json_schema',
    json_schema: compact({ name: f.name, schema: f.schema, strict: f.strict, description: f.description }) as { name: string },
  };
}

/**
 * The chat request for a Responses request. `previousItems` is the stored conversation
 * (input and output items of the earlier responses) that `previous_response_id` named;
 * the earlier `instructions` are not carried over, as on OpenAI.
 */
export function responsesToChat(body: ResponsesRequest, previousItems: readonly ConversationItem[] = []): ChatRequest {
  const messages: ChatMessage[] = [];
  if (body.instructions) messages.push({ role: 'system', content: body.instructions });
  previousItems.forEach((item) => appendItem(messages, item, `previous_response_id`));
  inputItemsOf(body).forEach((item, i) => appendItem(messages, item, typeof body.input === 'string' ? 'input' : `input[${i}]`));
  if (!messages.some((m) => m.role !== 'system')) throw badRequest('`input` is required.', 'input', 'missing_required_parameter');

  const { tool_choice, allowed } = toolChoiceOf(body.tool_choice);
  let tools = toolsOf(body.tools);
  if (allowed) tools = tools?.filter((t) => allowed.includes(t.function.name));
  const stream = body.stream === true;
  return compact({
    model: body.model,
    messages,
    max_completion_tokens: body.max_output_tokens,
    temperature: body.temperature,
    top_p: body.top_p,
    tools,
    // Chat APIs refuse `tool_choice` without tools; `auto`/`none` then mean nothing anyway.
    tool_choice: tools?.length || (tool_choice !== 'auto' && tool_choice !== 'none') ? tool_choice : undefined,
    parallel_tool_calls: tools?.length ? body.parallel_tool_calls : undefined,
    response_format: responseFormatOf(body.text),
    verbosity: body.text?.verbosity,
    reasoning_effort: body.reasoning?.effort,
    metadata: body.metadata,
    user: body.user,
    stream: stream || undefined,
    stream_options: stream ? { include_usage: true } : undefined,
  }) as ChatRequest;
}
