/**
 * OpenAI chat <-> Gemini `generateContent`, shared by the Gemini Developer
 * API (google/) and Vertex AI (vertex-ai/). JSON Schema cleaning is in schema.ts,
 * the stream translator in stream.ts.
 */
import { randomBytes } from 'node:crypto';
import { badRequest } from '../../../shared/errors';
import { toGeminiSchema } from './schema';
import { refuseNonFunctionTools } from '../unhonoured';
import { parseArguments, parseDataUrl, type LoosePart } from '../cloud-common';
import { textOf } from '../openai-shape';
import type { ChatCompletion, ChatRequest, ContentPart, FinishReason, TranslateContext, Usage } from '../../types';

export interface GeminiPart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  inlineData?: { mimeType: string; data: string };
  fileData?: { mimeType: string; fileUri: string };
  functionCall?: { name: string; args?: Record<string, unknown>; id?: string };
  functionResponse?: { name: string; response: Record<string, unknown> };
}
export interface GeminiContent {
  role: 'user' | 'model';
  parts: GeminiPart[];
}
export interface GeminiUsage {
  promptTokenCount?: number;
  candidatesTokenCount?: number;
  totalTokenCount?: number;
  thoughtsTokenCount?: number;
  cachedContentTokenCount?: number;
  toolUsePromptTokenCount?: number;
}
export interface GeminiCandidate {
  content?: { role?: string; parts?: GeminiPart[] };
  finishReason?: string;
  index?: number;
}
export interface GeminiResponse {
  candidates?: GeminiCandidate[];
  promptFeedback?: { blockReason?: string };
  usageMetadata?: GeminiUsage;
  responseId?: string;
  error?: unknown;
}

/**
 * Gemini rarely names its function calls, so the gateway synthesises the OpenAI id. A
 * `thoughtSignature` on the call rides along in the id, so it is sent back when the
 * caller replays the assistant turn (Gemini 2.5+/3 require it).
 */
const SIGNATURE_SEPARATOR = '__thought__';

export function toolCallId(part: GeminiPart): string {
  const base = part.functionCall?.id || `call_${randomBytes(12).toString('hex')}`;
  return part.thoughtSignature ? `${base}${SIGNATURE_SEPARATOR}${part.thoughtSignature}` : base;
}

const signatureOf = (id: string): string | undefined => id.split(SIGNATURE_SEPARATOR)[1] || undefined;

const MIME_BY_EXTENSION: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  heic: 'image/heic',
  heif: 'image/heif',
  pdf: 'application/pdf',
  txt: 'text/plain',
  mp3: 'audio/mp3',
  wav: 'audio/wav',
  flac: 'audio/flac',
  mp4: 'video/mp4',
  mov: 'video/mov',
};

function mediaPart(url: string, param: string, mimeHint?: string): GeminiPart {
  const inline = parseDataUrl(url);
  if (inline) return { inlineData: inline };
  if (/^(https?|gs):\/\//i.test(url)) {
    const ext = /\.([a-z0-9]+)(?:[?#].*)?$/i.exec(url)?.[1]?.toLowerCase() ?? '';
    return { fileData: { mimeType: mimeHint ?? MIME_BY_EXTENSION[ext] ?? 'image/jpeg', fileUri: url } };
  }
  throw badRequest(`${param} must be a data: URL (base64) or an http(s):// or gs:// URL.`, param, 'invalid_content');
}

function partOf(part: ContentPart, param: string): GeminiPart {
  const p = part as LoosePart;
  switch (p.type) {
    case 'text':
      return { text: String(p.text ?? '') };
    case 'image_url':
      return mediaPart(String(p.image_url?.url ?? ''), `${param}.image_url.url`);
    case 'input_audio':
      return { inlineData: { mimeType: `audio/${p.input_audio?.format ?? 'wav'}`, data: String(p.input_audio?.data ?? '') } };
    case 'file':
      if (typeof p.file?.file_data === 'string') return mediaPart(p.file.file_data, `${param}.file.file_data`);
      if (typeof p.file?.file_id === 'string') {
        const hint = p.file.format ?? p.file.mime_type;
        return mediaPart(p.file.file_id, `${param}.file.file_id`, typeof hint === 'string' ? hint : undefined);
      }
      throw badRequest(`${param}.file needs file_data (a data: URL) or file_id (a file URI).`, param, 'invalid_content');
    default:
      throw badRequest(`Content part type '${String(p.type)}' is not supported by Gemini.`, `${param}.type`, 'unsupported_content');
  }
}

function userParts(content: string | ContentPart[], param: string): GeminiPart[] {
  if (typeof content === 'string') return content ? [{ text: content }] : [];
  return content.map((p, j) => partOf(p, `${param}[${j}]`));
}

/** A tool result as the object Gemini wants: a JSON object as is, anything else wrapped. */
function toolResponse(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // plain text
  }
  return { content: text };
}

function contentsOf(body: ChatRequest): { contents: GeminiContent[]; system: GeminiPart[] } {
  const contents: GeminiContent[] = [];
  const system: GeminiPart[] = [];
  const toolNames = new Map<string, string>();
  // Gemini needs alternating turns: consecutive same-role messages are merged.
  const push = (role: GeminiContent['role'], parts: GeminiPart[]) => {
    if (parts.length === 0) return;
    const last = contents[contents.length - 1];
    if (last && last.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  body.messages.forEach((m, i) => {
    const param = `messages[${i}]`;
    switch (m.role) {
      case 'system':
      case 'developer': {
        // One part per text part: block boundaries kept.
        if (typeof m.content === 'string') {
          if (m.content) system.push({ text: m.content });
        } else for (const p of m.content) if (p.type === 'text' && (p as { text?: unknown }).text) system.push({ text: (p as { text: string }).text });
        break;
      }
      case 'user':
        push('user', userParts(m.content, `${param}.content`));
        break;
      case 'assistant': {
        const parts: GeminiPart[] = [];
        const text = textOf(m.content);
        if (text) parts.push({ text });
        (m.tool_calls ?? []).forEach((call, k) => {
          toolNames.set(call.id, call.function.name);
          const args = parseArguments(call.function.arguments, `${param}.tool_calls[${k}].function.arguments`);
          const signature = signatureOf(call.id);
          parts.push({ functionCall: { name: call.function.name, args }, ...(signature ? { thoughtSignature: signature } : {}) });
        });
        push('model', parts);
        break;
      }
      case 'tool': {
        const name = toolNames.get(m.tool_call_id);
        if (!name) {
          throw badRequest(
            `${param}.tool_call_id '${m.tool_call_id}' matches no earlier assistant tool call.`,
            `${param}.tool_call_id`,
            'invalid_tool_call_id',
          );
        }
        push('user', [{ functionResponse: { name, response: toolResponse(textOf(m.content)) } }]);
        break;
      }
      default:
        throw badRequest(`Message role '${String((m as { role: unknown }).role)}' is not supported.`, `${param}.role`, 'invalid_role');
    }
  });
  return { contents, system };
}

function toolFields(body: ChatRequest): Record<string, unknown> {
  refuseNonFunctionTools(body, 'Gemini');
  if (!body.tools?.length) return {};
  const functionDeclarations = body.tools.map((t, i) => {
    if (t.type !== 'function' || !t.function?.name) {
      throw badRequest('Only function tools are supported by Gemini.', `tools[${i}].type`, 'unsupported_tool');
    }
    const params = t.function.parameters;
    const hasProps = !!params && Object.keys((params.properties as object | undefined) ?? {}).length > 0;
    return {
      name: t.function.name,
      ...(t.function.description ? { description: t.function.description } : {}),
      ...(hasProps ? { parameters: toGeminiSchema(params!, `tools[${i}].function.parameters`) } : {}),
    };
  });
  const choice = body.tool_choice;
  const functionCallingConfig =
    choice === 'none'
      ? { mode: 'NONE' }
      : choice === 'required'
        ? { mode: 'ANY' }
        : choice === 'auto'
          ? { mode: 'AUTO' }
          : choice && typeof choice === 'object'
            ? { mode: 'ANY', allowedFunctionNames: [choice.function.name] }
            : undefined;
  return { tools: [{ functionDeclarations }], ...(functionCallingConfig ? { toolConfig: { functionCallingConfig } } : {}) };
}

function generationConfig(body: ChatRequest): Record<string, unknown> {
  const stop = body.stop == null ? undefined : Array.isArray(body.stop) ? body.stop : [body.stop];
  const format = body.response_format;
  const config: Record<string, unknown> = {
    temperature: body.temperature,
    topP: body.top_p,
    topK: typeof body.top_k === 'number' ? body.top_k : undefined,
    maxOutputTokens: body.max_completion_tokens ?? body.max_tokens,
    stopSequences: stop,
    candidateCount: body.n,
    seed: body.seed,
    presencePenalty: body.presence_penalty,
    frequencyPenalty: body.frequency_penalty,
    responseLogprobs: body.logprobs === true ? true : undefined,
    logprobs: body.logprobs === true && typeof body.top_logprobs === 'number' ? body.top_logprobs : undefined,
    responseMimeType: format?.type === 'json_object' || format?.type === 'json_schema' ? 'application/json' : undefined,
    responseSchema:
      format?.type === 'json_schema' && format.json_schema?.schema
        ? toGeminiSchema(format.json_schema.schema, 'response_format.json_schema.schema')
        : undefined,
  };
  return Object.fromEntries(Object.entries(config).filter(([, v]) => v !== undefined && v !== null));
}

/** OpenAI chat request -> Gemini GenerateContentRequest (role set on every content). */
export function toGeminiRequest(body: ChatRequest): Record<string, unknown> {
  const bias = body.logit_bias;
  if (bias && typeof bias === 'object' && Object.keys(bias).length) {
    throw badRequest('Gemini has no logit bias: remove `logit_bias`.', 'logit_bias', 'unsupported_parameter');
  }
  const { contents, system } = contentsOf(body);
  const gen = generationConfig(body);
  return {
    contents,
    ...(system.length ? { systemInstruction: { parts: system } } : {}),
    ...toolFields(body),
    ...(Object.keys(gen).length ? { generationConfig: gen } : {}),
    // Set by the gateway's Gemini route only (a Gemini caller's own settings), never by chat callers.
    ...(Array.isArray(body.safety_settings) ? { safetySettings: body.safety_settings } : {}),
  };
}

const CONTENT_FILTER = new Set(['SAFETY', 'LANGUAGE', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT']);

export function finishReasonOf(reason: string | undefined): FinishReason {
  if (reason === 'MAX_TOKENS') return 'length';
  return reason && CONTENT_FILTER.has(reason) ? 'content_filter' : 'stop';
}

export function usageOf(m: GeminiUsage | undefined): Usage | undefined {
  if (!m) return undefined;
  const prompt = (m.promptTokenCount ?? 0) + (m.toolUsePromptTokenCount ?? 0);
  const thoughts = m.thoughtsTokenCount ?? 0;
  // OpenAI semantics: completion tokens include reasoning.
  const completion = (m.candidatesTokenCount ?? 0) + thoughts;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: m.totalTokenCount ?? prompt + completion,
    prompt_tokens_details: { cached_tokens: m.cachedContentTokenCount ?? 0 },
    completion_tokens_details: { reasoning_tokens: thoughts },
  };
}

/** Answer text (thought parts excluded) and tool calls of one candidate. */
export function candidateOutput(c: GeminiCandidate) {
  const parts = c.content?.parts ?? [];
  const text = parts
    .filter((p) => typeof p.text === 'string' && !p.thought)
    .map((p) => p.text)
    .join('');
  const toolCalls = parts
    .filter((p) => p.functionCall)
    .map((p) => ({
      id: toolCallId(p),
      type: 'function' as const,
      function: { name: p.functionCall!.name, arguments: JSON.stringify(p.functionCall!.args ?? {}) },
    }));
  return { text, toolCalls };
}

/** Gemini GenerateContentResponse -> OpenAI chat.completion. */
export function fromGeminiResponse(upstream: unknown, ctx: TranslateContext): ChatCompletion {
  const res = (upstream ?? {}) as GeminiResponse;
  const candidates = res.candidates ?? [];
  const choices: ChatCompletion['choices'] = candidates.map((c, i) => {
    const { text, toolCalls } = candidateOutput(c);
    return {
      index: c.index ?? i,
      message: {
        role: 'assistant',
        content: text || null,
        refusal: null,
        ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
      },
      logprobs: null,
      finish_reason: toolCalls.length ? 'tool_calls' : finishReasonOf(c.finishReason),
    };
  });
  if (choices.length === 0) {
    // A blocked prompt has no candidates at all.
    const blocked = !!res.promptFeedback?.blockReason;
    choices.push({
      index: 0,
      message: { role: 'assistant', content: null, refusal: null },
      logprobs: null,
      finish_reason: blocked ? 'content_filter' : 'stop',
    });
  }
  const usage = usageOf(res.usageMetadata);
  return {
    id: res.responseId || ctx.id,
    object: 'chat.completion',
    created: ctx.created,
    model: ctx.model,
    choices,
    ...(usage ? { usage } : {}),
  };
}
