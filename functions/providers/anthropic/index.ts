/**
 * Anthropic Messages API. Chat is translated both ways; the stream
 * translator is in stream.ts. No embeddings, audio or rerank.
 *
 * `response_format` json_object/json_schema becomes a forced call of an answer tool whose
 * input schema is the caller's schema (_shared/json-answer.ts); its input comes back as the
 * message content. Where Messages has no equivalent: `n > 1`, `logprobs` and `logit_bias`
 * are a 400 (_shared/unhonoured.ts); `seed`, `presence_penalty`, `frequency_penalty`, message
 * `name` and `strict` on tools are dropped. Anthropic-only `top_k` and `thinking` pass.
 */
import { badRequest } from '../../shared/errors';
import { refuseUnhonoured } from '../_shared/unhonoured';
import { forcedToolChoice, isJsonAnswerTool, jsonAnswerText, jsonAnswerTool, type JsonAnswerTool } from '../_shared/json-answer';
import { anthropicStream, anthropicUsage, finishReasonOf, usageCounts } from './stream';
import { compact, completion, jsonGet, jsonPost, requireKey, resolveBase, stopList, unixSeconds, type ToolCall } from '../_shared/openai-shape';
import type { ChatMessage, ChatRequest, ContentPart, ProviderAdapter, ProviderTarget } from '../types';

export const ANTHROPIC_VERSION = '2023-06-01';
/** Messages requires max_tokens; OpenAI callers usually omit it. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

type Block = Record<string, unknown> & { type: string };
type Message = { role: 'user' | 'assistant'; content: string | Block[] };

const DATA_URL = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s;

function mediaBlock(url: string, param: string): Block {
  const data = DATA_URL.exec(url);
  if (data) {
    const source = { type: 'base64', media_type: data[1]!, data: data[2]! };
    return { type: data[1] === 'application/pdf' ? 'document' : 'image', source };
  }
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  throw badRequest(`${param} must be an http(s) URL or a base64 data URL for Anthropic.`, param);
}

/** A chat part's (or tool's) `cache_control` mark, placed on its Anthropic block as Anthropic takes it. */
function withCacheMark<T extends object>(block: T, from: object): T {
  const mark = (from as { cache_control?: unknown }).cache_control;
  return mark == null ? block : { ...block, cache_control: mark };
}

function partBlock(part: ContentPart, param: string): Block {
  return withCacheMark(partBlockOf(part, param), part);
}

function partBlockOf(part: ContentPart, param: string): Block {
  if (part.type === 'text') return { type: 'text', text: (part as { text: string }).text };
  if (part.type === 'image_url') {
    return mediaBlock((part as { image_url: { url: string } }).image_url.url, `${param}.image_url.url`);
  }
  if (part.type === 'file') {
    const file = (part as { file?: { file_data?: string } }).file;
    if (file?.file_data) {
      const url = file.file_data.startsWith('data:') ? file.file_data : `data:application/pdf;base64,${file.file_data}`;
      const block = mediaBlock(url, `${param}.file.file_data`);
      return { ...block, type: 'document' };
    }
    throw badRequest('Anthropic takes files as inline `file_data` only (no `file_id`).', `${param}.file`);
  }
  throw badRequest(`Content part type '${part.type}' is not supported by Anthropic.`, `${param}.type`);
}

const blocksOf = (content: string | ContentPart[], param: string): string | Block[] =>
  typeof content === 'string' ? content : content.map((p, i) => partBlock(p, `${param}[${i}]`));

/** Text parts as text blocks, one each (empty ones left out: Anthropic refuses them). */
const textBlocks = (content: ContentPart[]): Block[] =>
  content.filter((p) => p.type === 'text' && (p as { text?: unknown }).text).map((p) => withCacheMark({ type: 'text', text: (p as { text: string }).text }, p));

function assistantMessage(m: Extract<ChatMessage, { role: 'assistant' }>, param: string): Message | undefined {
  const blocks: Block[] = Array.isArray(m.content) ? textBlocks(m.content) : m.content ? [{ type: 'text', text: m.content }] : [];
  if (!m.tool_calls?.length) {
    if (!blocks.length) return undefined;
    return typeof m.content === 'string' ? { role: 'assistant', content: m.content } : { role: 'assistant', content: blocks };
  }
  m.tool_calls.forEach((call, i) => {
    const where = `${param}.tool_calls[${i}].function.arguments`;
    let input: unknown;
    try {
      input = JSON.parse(call.function.arguments || '{}');
    } catch {
      throw badRequest(`${where} must be a JSON object encoded as a string.`, where);
    }
    blocks.push({ type: 'tool_use', id: call.id, name: call.function.name, input });
  });
  return { role: 'assistant', content: blocks };
}

/** OpenAI messages -> Anthropic `system` blocks and alternating `messages`. */
export function toAnthropicMessages(messages: ChatMessage[]): { system: Block[]; messages: Message[] } {
  const system: Block[] = [];
  const out: Message[] = [];
  let previous: string | undefined;
  messages.forEach((m, i) => {
    const param = `messages[${i}]`;
    switch (m.role) {
      case 'system':
      case 'developer': {
        if (Array.isArray(m.content)) system.push(...textBlocks(m.content));
        else if (m.content) system.push({ type: 'text', text: m.content });
        break;
      }
      case 'user':
        out.push({ role: 'user', content: blocksOf(m.content, `${param}.content`) });
        break;
      case 'assistant': {
        // Anthropic rejects assistant turns with empty content, so they are left out.
        const msg = assistantMessage(m, param);
        if (msg) out.push(msg);
        break;
      }
      case 'tool': {
        const block: Block = { type: 'tool_result', tool_use_id: m.tool_call_id, content: blocksOf(m.content, `${param}.content`) };
        const last = out.at(-1);
        // Every result for one assistant turn must arrive in the single next user turn.
        if (previous === 'tool' && last && Array.isArray(last.content)) last.content.push(block);
        else out.push({ role: 'user', content: [block] });
        break;
      }
      default:
        throw badRequest(`Message role '${(m as { role: string }).role}' is not supported by Anthropic.`, `${param}.role`);
    }
    previous = m.role;
  });
  return { system, messages: out };
}

function toolChoice(body: ChatRequest): Record<string, unknown> | undefined {
  const tc = body.tool_choice;
  let choice: Record<string, unknown> | undefined;
  if (tc === 'auto') choice = { type: 'auto' };
  else if (tc === 'required') choice = { type: 'any' };
  else if (tc === 'none') choice = { type: 'none' };
  else if (tc && typeof tc === 'object') choice = { type: 'tool', name: tc.function.name };
  if (body.parallel_tool_calls === false && body.tools?.length && choice?.type !== 'none') {
    choice = { ...(choice ?? { type: 'auto' }), disable_parallel_tool_use: true };
  }
  return choice;
}

/**
 * The tool choice that makes the model answer with the answer tool. Extended thinking
 * refuses forced tool use, so with thinking on the model is asked to call it instead.
 */
function answerToolChoice(body: ChatRequest, answer: JsonAnswerTool, system: Block[]): Record<string, unknown> | undefined {
  const thinking = (body.thinking as { type?: string } | undefined)?.type === 'enabled';
  if (thinking) {
    system.push({ type: 'text', text: `Give your final answer by calling the tool ${answer.name}.` });
    return toolChoice(body);
  }
  const forced = forcedToolChoice(body);
  const choice = forced.kind === 'answer' ? { type: 'tool', name: answer.name } : forced.kind === 'any' ? { type: 'any' } : toolChoice(body);
  return body.parallel_tool_calls === false ? { ...choice, disable_parallel_tool_use: true } : choice;
}

export function anthropicBody(body: ChatRequest): Record<string, unknown> {
  refuseUnhonoured(body, 'Anthropic');
  const { system, messages } = toAnthropicMessages(body.messages);
  const answer = jsonAnswerTool(body);
  const tools = body.tools?.map((t) =>
    withCacheMark(
      compact({ name: t.function.name, description: t.function.description, input_schema: t.function.parameters ?? { type: 'object', properties: {} } }),
      t,
    ),
  );
  const allTools = answer ? [...(tools ?? []), { name: answer.name, description: answer.description, input_schema: answer.inputSchema }] : tools;
  const choice = answer ? answerToolChoice(body, answer, system) : toolChoice(body);
  return compact({
    model: body.model,
    max_tokens: body.max_completion_tokens ?? body.max_tokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
    system: system.length ? system : undefined,
    messages,
    tools: allTools,
    tool_choice: choice,
    stop_sequences: stopList(body.stop),
    temperature: body.temperature,
    top_p: body.top_p,
    top_k: typeof body.top_k === 'number' ? body.top_k : undefined,
    metadata: body.user ? { user_id: body.user } : undefined,
    thinking: body.thinking,
    cache_control: body.cache_control,
    stream: body.stream ? true : undefined,
  });
}

/** The fields of a Messages body that `/messages/count_tokens` takes (it refuses the others, `max_tokens` included). */
const COUNT_TOKENS_FIELDS = ['model', 'messages', 'system', 'tools', 'tool_choice', 'thinking', 'mcp_servers'];
const countTokensBody = (body: Record<string, unknown>) =>
  Object.fromEntries(COUNT_TOKENS_FIELDS.filter((f) => body[f] !== undefined).map((f) => [f, body[f]]));

const baseUrl = (t: ProviderTarget) => resolveBase(t, 'https://api.anthropic.com/v1');
const authHeaders = (t: ProviderTarget) => ({ 'x-api-key': requireKey(t, 'Anthropic'), 'anthropic-version': ANTHROPIC_VERSION });

type AnthropicResponse = {
  id?: string;
  content?: Array<{ type: string; text?: string; id?: string; name?: string; input?: unknown }>;
  stop_reason?: string | null;
  usage?: Record<string, unknown>;
};

export const anthropic: ProviderAdapter = {
  slug: 'anthropic',
  name: 'Anthropic',
  baseUrl,
  authHeaders,
  models: {
    // One page of the largest size the API allows.
    request: (target) => jsonGet(`${baseUrl(target)}/models?limit=1000`, authHeaders(target), target),
    response: (upstream) =>
      ((upstream as { data?: Array<{ id?: unknown; created_at?: unknown }> }).data ?? [])
        .filter((m) => typeof m.id === 'string')
        .map((m) => ({ id: m.id as string, object: 'model', created: unixSeconds(m.created_at), owned_by: 'anthropic' })),
  },
  countTokens: {
    request: (body, target) => jsonPost(`${baseUrl(target)}/messages/count_tokens`, countTokensBody(anthropicBody(body)), authHeaders(target), target),
    response: (upstream) => (upstream as { input_tokens?: unknown }).input_tokens as number | undefined,
  },
  chat: {
    request: (body, target) => jsonPost(`${baseUrl(target)}/messages`, anthropicBody(body), authHeaders(target), target),
    response(upstream, ctx) {
      const r = upstream as AnthropicResponse;
      const blocks = r.content ?? [];
      const answer = blocks.find((b) => b.type === 'tool_use' && isJsonAnswerTool(b.name));
      // The answer tool's input is the answer; any text around it is not JSON.
      const text = answer
        ? jsonAnswerText(answer.name, answer.input)
        : blocks
            .filter((b) => b.type === 'text')
            .map((b) => b.text ?? '')
            .join('');
      const toolCalls: ToolCall[] = blocks
        .filter((b) => b.type === 'tool_use' && !isJsonAnswerTool(b.name))
        .map((b) => ({ id: b.id ?? '', type: 'function', function: { name: b.name ?? '', arguments: JSON.stringify(b.input ?? {}) } }));
      const finish = answer && !toolCalls.length && r.stop_reason === 'tool_use' ? 'stop' : finishReasonOf(r.stop_reason);
      return completion(ctx, {
        id: r.id,
        content: toolCalls.length && !text ? null : text,
        toolCalls,
        finish,
        usage: r.usage ? anthropicUsage(usageCounts(r.usage)) : undefined,
      });
    },
    stream: anthropicStream,
  },
};
