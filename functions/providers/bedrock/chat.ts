/**
 * OpenAI chat <-> Bedrock Converse: system messages -> `system[]`, tool
 * calls -> `toolUse`, tool messages -> user `toolResult` blocks (consecutive ones merged
 * into one user turn, as Converse needs alternating roles), tools -> `toolConfig`,
 * sampling -> `inferenceConfig`, images from data: URLs -> `image.source.bytes`. Each text
 * part is its own block; a `cache_control` mark on a part, tool or tool result (the
 * Anthropic extension of chat) becomes a `cachePoint` block right after it.
 */
import { badRequest } from '../../shared/errors';
import { refuseUnhonoured } from '../_shared/unhonoured';
import { forcedToolChoice, isJsonAnswerTool, jsonAnswerText, jsonAnswerTool } from '../_shared/json-answer';
import { parseArguments, parseDataUrl, type LoosePart } from '../_shared/cloud-common';
import { compact, completion, makeUsage, stopList, textOf } from '../_shared/openai-shape';
import type { ChatCompletion, ChatRequest, ContentPart, FinishReason, TranslateContext, Usage } from '../types';

type Block = Record<string, unknown>;
interface ConverseMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

const IMAGE_FORMATS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/jpg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  png: 'png',
  jpg: 'jpeg',
  jpeg: 'jpeg',
  gif: 'gif',
  webp: 'webp',
};
const DOCUMENT_FORMATS: Record<string, string> = {
  'application/pdf': 'pdf',
  'text/csv': 'csv',
  'text/html': 'html',
  'text/plain': 'txt',
  'text/markdown': 'md',
  'application/msword': 'doc',
  'application/vnd.ms-excel': 'xls',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
};
/** Fields a caller may set Bedrock-natively; passed through untouched. */
const NATIVE_FIELDS = ['additionalModelRequestFields', 'additionalModelResponseFieldPaths', 'guardrailConfig', 'performanceConfig', 'requestMetadata'];

function imageBlock(url: string, param: string): Block {
  const inline = parseDataUrl(url);
  if (inline) {
    const format = IMAGE_FORMATS[inline.mimeType];
    if (!format) throw badRequest(`${param}: Bedrock images must be png, jpeg, gif or webp.`, param, 'unsupported_content');
    return { image: { format, source: { bytes: inline.data } } };
  }
  const ext = /^s3:\/\/.+\.([a-z]+)$/i.exec(url)?.[1]?.toLowerCase();
  if (ext && IMAGE_FORMATS[ext]) return { image: { format: IMAGE_FORMATS[ext], source: { s3Location: { uri: url } } } };
  throw badRequest(`${param}: Bedrock takes images as data: URLs (base64) or s3:// URIs, not remote URLs.`, param, 'unsupported_content');
}

function documentBlock(file: LoosePart['file'], param: string): Block {
  const inline = typeof file?.file_data === 'string' ? parseDataUrl(file.file_data) : undefined;
  const format = inline && DOCUMENT_FORMATS[inline.mimeType];
  if (!inline || !format)
    throw badRequest(`${param}: Bedrock takes files as file_data data: URLs of a document type (pdf, csv, docx, …).`, param, 'unsupported_content');
  // Bedrock document names: letters, digits, spaces, hyphens, parentheses, brackets.
  const base = String(file?.filename ?? 'document').replace(/\.[^.]*$/, '');
  const name =
    base
      .replace(/[^A-Za-z0-9 ()[\]-]+/g, '-')
      .replace(/\s+/g, ' ')
      .trim() || 'document';
  return { document: { format, name, source: { bytes: inline.data } } };
}

/** Converse's prompt-cache mark: a `cachePoint` block after the content to cache up to. */
const CACHE_POINT: Block = { cachePoint: { type: 'default' } };
const cacheMarked = (from: unknown): boolean => (from as { cache_control?: unknown } | null)?.cache_control != null;
const anyCacheMarked = (content: unknown): boolean => Array.isArray(content) && content.some(cacheMarked);

function userBlock(p: LoosePart, at: string): Block {
  if (p.type === 'text') return { text: String(p.text ?? '') };
  if (p.type === 'image_url') return imageBlock(String(p.image_url?.url ?? ''), `${at}.image_url.url`);
  if (p.type === 'file') return documentBlock(p.file, `${at}.file`);
  throw badRequest(`Content part type '${String(p.type)}' is not supported by Bedrock.`, `${at}.type`, 'unsupported_content');
}

/** Parts as Converse blocks, one each (block boundaries kept); a `cache_control` mark becomes a cache point after its part. */
function userBlocks(content: string | ContentPart[], param: string): Block[] {
  if (typeof content === 'string') return content ? [{ text: content }] : [];
  return content.flatMap((part, j) => {
    const block = userBlock(part as LoosePart, `${param}[${j}]`);
    return cacheMarked(part) ? [block, CACHE_POINT] : [block];
  });
}

/** System text parts as system blocks, one each (empty ones left out), with their cache points. */
function systemBlocks(content: string | ContentPart[]): Block[] {
  if (typeof content === 'string') return content ? [{ text: content }] : [];
  return content
    .filter((p) => p.type === 'text' && (p as { text?: unknown }).text)
    .flatMap((p) => (cacheMarked(p) ? [{ text: (p as { text: string }).text }, CACHE_POINT] : [{ text: (p as { text: string }).text }]));
}

function messagesOf(body: ChatRequest): { system: Block[]; messages: ConverseMessage[]; usesTools: boolean } {
  const system: Block[] = [];
  const messages: ConverseMessage[] = [];
  let usesTools = false;
  const push = (role: ConverseMessage['role'], content: Block[]) => {
    if (content.length === 0) return;
    const last = messages[messages.length - 1];
    if (last && last.role === role) last.content.push(...content);
    else messages.push({ role, content });
  };
  body.messages.forEach((m, i) => {
    const param = `messages[${i}]`;
    if (m.role === 'system' || m.role === 'developer') {
      system.push(...systemBlocks(m.content));
    } else if (m.role === 'user') {
      push('user', userBlocks(m.content, `${param}.content`));
    } else if (m.role === 'assistant') {
      const blocks: Block[] = [];
      const text = textOf(m.content);
      if (text.trim()) blocks.push({ text }); // Converse rejects blank text blocks
      if (text.trim() && anyCacheMarked(m.content)) blocks.push(CACHE_POINT);
      (m.tool_calls ?? []).forEach((call, k) => {
        usesTools = true;
        const input = parseArguments(call.function.arguments, `${param}.tool_calls[${k}].function.arguments`);
        blocks.push({ toolUse: { toolUseId: call.id, name: call.function.name, input } });
      });
      push('assistant', blocks);
    } else if (m.role === 'tool') {
      usesTools = true;
      const result = { toolResult: { toolUseId: m.tool_call_id, content: [{ text: textOf(m.content) }] } };
      push('user', anyCacheMarked(m.content) ? [result, CACHE_POINT] : [result]);
    } else {
      throw badRequest(`Message role '${String((m as { role: unknown }).role)}' is not supported.`, `${param}.role`, 'invalid_role');
    }
  });
  return { system, messages, usesTools };
}

/**
 * `response_format` as a forced call of an answer tool whose input schema is the caller's
 * (_shared/json-answer.ts): the Converse API's only means to hold a model to a schema.
 */
function withAnswerTool(body: ChatRequest, config: Block | undefined): Block | undefined {
  const answer = jsonAnswerTool(body);
  if (!answer) return config;
  const spec = { toolSpec: { name: answer.name, description: answer.description, inputSchema: { json: answer.inputSchema } } };
  const forced = forcedToolChoice(body);
  const toolChoice = forced.kind === 'answer' ? { tool: { name: answer.name } } : forced.kind === 'any' ? { any: {} } : config?.toolChoice;
  return { tools: [...((config?.tools as Block[] | undefined) ?? []), spec], ...(toolChoice ? { toolChoice } : {}) };
}

function toolConfig(body: ChatRequest, usesTools: boolean): Block | undefined {
  if (!body.tools?.length) return undefined;
  // "none" has no Converse equivalent: drop the tools, unless the history has tool blocks
  // (Converse then requires toolConfig).
  if (body.tool_choice === 'none' && !usesTools) return undefined;
  const tools = body.tools.flatMap((t, i) => {
    if (t.type !== 'function' || !t.function?.name) throw badRequest('Only function tools are supported by Bedrock.', `tools[${i}].type`, 'unsupported_tool');
    const spec: Block = {
      toolSpec: {
        name: t.function.name,
        ...(t.function.description ? { description: t.function.description } : {}),
        inputSchema: { json: t.function.parameters ?? { type: 'object', properties: {} } },
      },
    };
    return cacheMarked(t) ? [spec, CACHE_POINT] : [spec];
  });
  const choice = body.tool_choice;
  const toolChoice =
    choice === 'required'
      ? { any: {} }
      : choice === 'auto'
        ? { auto: {} }
        : choice && typeof choice === 'object'
          ? { tool: { name: choice.function.name } }
          : undefined;
  return { tools, ...(toolChoice ? { toolChoice } : {}) };
}

/** OpenAI chat request -> ConverseRequest body (the model id goes in the URL). */
export function toConverseRequest(body: ChatRequest): Record<string, unknown> {
  refuseUnhonoured(body, 'Bedrock');
  const { system, messages, usesTools } = messagesOf(body);
  const inference = compact({
    maxTokens: body.max_completion_tokens ?? body.max_tokens,
    temperature: body.temperature,
    topP: body.top_p,
    stopSequences: stopList(body.stop),
  });
  const tools = withAnswerTool(body, toolConfig(body, usesTools));
  const native = Object.fromEntries(NATIVE_FIELDS.filter((f) => body[f] !== undefined).map((f) => [f, body[f]]));
  return {
    messages,
    ...(system.length ? { system } : {}),
    ...(Object.keys(inference).length ? { inferenceConfig: inference } : {}),
    ...(tools ? { toolConfig: tools } : {}),
    ...native,
  };
}

export function finishReasonOf(stopReason: string | undefined): FinishReason {
  switch (stopReason) {
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'guardrail_intervened':
    case 'content_filtered':
      return 'content_filter';
    default:
      return 'stop';
  }
}

export interface ConverseUsage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

/** Converse's inputTokens exclude cache reads/writes; OpenAI's prompt_tokens include them. */
export function usageOf(u: ConverseUsage | undefined): Usage | undefined {
  if (!u) return undefined;
  const cached = u.cacheReadInputTokens ?? 0;
  return makeUsage((u.inputTokens ?? 0) + cached + (u.cacheWriteInputTokens ?? 0), u.outputTokens ?? 0, cached, u.cacheWriteInputTokens);
}

interface ConverseResponse {
  output?: { message?: { content?: Array<{ text?: string; toolUse?: { toolUseId: string; name: string; input?: unknown } }> } };
  stopReason?: string;
  usage?: ConverseUsage;
}

/** ConverseResponse -> OpenAI chat.completion. */
export function fromConverseResponse(upstream: unknown, ctx: TranslateContext): ChatCompletion {
  const res = (upstream ?? {}) as ConverseResponse;
  const blocks = res.output?.message?.content ?? [];
  const answer = blocks.find((b) => isJsonAnswerTool(b.toolUse?.name))?.toolUse;
  // The answer tool's input is the answer; any text around it is not JSON.
  const text = answer ? jsonAnswerText(answer.name, answer.input) : blocks.map((b) => (typeof b.text === 'string' ? b.text : '')).join('');
  const toolCalls = blocks
    .filter((b) => b.toolUse && !isJsonAnswerTool(b.toolUse.name))
    .map((b) => ({
      id: b.toolUse!.toolUseId,
      type: 'function' as const,
      function: { name: b.toolUse!.name, arguments: JSON.stringify(b.toolUse!.input ?? {}) },
    }));
  return completion(ctx, {
    content: text || null,
    toolCalls,
    finish: toolCalls.length ? 'tool_calls' : answer && res.stopReason === 'tool_use' ? 'stop' : finishReasonOf(res.stopReason),
    usage: usageOf(res.usage),
  });
}
