/**
 * Gemini GenerateContentRequest -> the unified chat request, for every provider.
 *
 * - `contents`: `user` turns become user messages, `model` turns assistant messages
 *   (consecutive model turns, as a streamed answer is kept in a client's history, are one
 *   message); `functionResponse` parts become `tool` messages placed before the rest of
 *   their turn. Several parts of a user turn stay separate content parts (never glued).
 * - Function calls carry no id in Gemini: one is made from the turn and part index (stable,
 *   so the cache key is), and a `functionResponse` answers the call of its `id`, else the
 *   earliest unanswered call of its name.
 * - `inlineData` images and PDFs and `fileData` image URLs become image / file parts;
 *   `systemInstruction` parts become one system message (joined by a blank line).
 * - `generationConfig`: `responseMimeType: application/json` with `responseJsonSchema` or
 *   `responseSchema` becomes `response_format: json_schema` (enforced by every provider's
 *   structured output), without a schema `json_object`; `candidateCount` above 1,
 *   `cachedContent`, non-function tools and code-execution parts are refused by name.
 * - `thinkingConfig` and `safetySettings` are not translated (the route passes safety
 *   settings on to Google targets itself).
 */
import { badRequest } from '../../shared/errors';
import { parseInput } from '../../shared/validation';
import { compact } from '../../providers/_shared/openai-shape';
import type { ChatMessage, ChatRequest, ContentPart } from '../../providers/types';
import { fromGeminiSchema } from './json-schema';
import {
  fileDataSchema,
  functionCallSchema,
  functionResponseSchema,
  inlineDataSchema,
  textPartSchema,
  type FunctionDeclaration,
  type GeminiInboundContent,
  type GeminiInboundPart,
  type GenerateContentRequest,
} from './schema';

type FunctionResponse = ReturnType<typeof functionResponseSchema.parse>;

type ChatTool = NonNullable<ChatRequest['tools']>[number];
type ToolCall = NonNullable<Extract<ChatMessage, { role: 'assistant' }>['tool_calls']>[number];
interface PendingCall {
  id: string;
  name: string;
  answered: boolean;
}

const UNSUPPORTED_PARTS = ['executableCode', 'codeExecutionResult', 'videoMetadata', 'toolCall', 'toolResponse'];

/** The one data field a part carries (`text`, `inlineData`, ...). */
function kindOf(part: GeminiInboundPart, where: string): string {
  for (const key of ['text', 'inlineData', 'fileData', 'functionCall', 'functionResponse', ...UNSUPPORTED_PARTS]) if (part[key] !== undefined) return key;
  throw badRequest(`${where} has no data: expected one of text, inlineData, fileData, functionCall, functionResponse.`, where, 'invalid_part');
}

function mediaPart(part: GeminiInboundPart, kind: 'inlineData' | 'fileData', where: string): ContentPart {
  if (kind === 'inlineData') {
    const { mimeType, data } = parseInput(inlineDataSchema, part.inlineData, `${where}.inlineData`);
    const url = `data:${mimeType};base64,${data}`;
    if (mimeType.startsWith('image/')) return { type: 'image_url', image_url: { url } };
    if (mimeType === 'application/pdf') return { type: 'file', file: { file_data: url } };
    if (mimeType.startsWith('audio/')) return { type: 'input_audio', input_audio: { data, format: mimeType.slice('audio/'.length).replace(/^mpeg$/, 'mp3') } };
    throw badRequest(
      `${where}.inlineData.mimeType '${mimeType}' cannot be translated: images, PDFs and audio can.`,
      `${where}.inlineData.mimeType`,
      'unsupported_value',
    );
  }
  const { mimeType, fileUri } = parseInput(fileDataSchema, part.fileData, `${where}.fileData`);
  if (mimeType && !mimeType.startsWith('image/')) {
    throw badRequest(
      `${where}.fileData with mimeType '${mimeType}' cannot be translated: only image URLs can.`,
      `${where}.fileData.mimeType`,
      'unsupported_value',
    );
  }
  return { type: 'image_url', image_url: { url: fileUri } };
}

function userTurn(content: GeminiInboundContent, where: string, calls: PendingCall[]): ChatMessage[] {
  const responses: Array<{ result: FunctionResponse; at: string }> = [];
  const parts: ContentPart[] = [];
  content.parts.forEach((part, j) => {
    const at = `${where}.parts[${j}]`;
    const kind = kindOf(part, at);
    switch (kind) {
      case 'text':
        if (part.thought !== true) parts.push({ type: 'text', text: parseInput(textPartSchema, part, at).text });
        return;
      case 'inlineData':
      case 'fileData':
        parts.push(mediaPart(part, kind, at));
        return;
      case 'functionResponse':
        responses.push({ result: parseInput(functionResponseSchema, part.functionResponse, `${at}.functionResponse`), at });
        return;
    }
    throw badRequest(`${at}.${kind} is not supported in a user turn.`, `${at}.${kind}`, 'unsupported_value');
  });
  const tools = toolMessages(responses, calls);
  if (!parts.length) return tools;
  // One text part stays a string (as every provider takes it); several keep their boundaries.
  const only = parts.length === 1 && parts[0]!.type === 'text' ? (parts[0] as { text: string }).text : undefined;
  return [...tools, { role: 'user', content: only ?? parts }];
}

/**
 * The tool messages of a turn's function responses, in their order. Responses naming a call
 * id claim their call first; the others then answer the earliest unanswered call of their name.
 */
function toolMessages(responses: Array<{ result: FunctionResponse; at: string }>, calls: PendingCall[]): ChatMessage[] {
  const claimed = new Map<number, PendingCall>();
  const claim = (byId: boolean) =>
    responses.forEach(({ result, at }, k) => {
      if (Boolean(result.id) !== byId) return;
      const call = calls.find((c) => !c.answered && (byId ? c.id === result.id : c.name === result.name));
      if (!call) {
        throw badRequest(
          `${at}.functionResponse '${result.name}' answers no earlier functionCall of a model turn.`,
          `${at}.functionResponse.${byId ? 'id' : 'name'}`,
          'invalid_function_response',
        );
      }
      call.answered = true;
      claimed.set(k, call);
    });
  claim(true);
  claim(false);
  return responses.map(({ result }, k) => ({ role: 'tool', tool_call_id: claimed.get(k)!.id, content: JSON.stringify(result.response ?? {}) }));
}

/** Model turns in a row (a streamed answer in a client's history) are one assistant message. */
function modelTurn(run: Array<{ content: GeminiInboundContent; index: number }>, calls: PendingCall[]): ChatMessage {
  let text = '';
  const toolCalls: ToolCall[] = [];
  for (const { content, index } of run) {
    content.parts.forEach((part, j) => {
      const at = `contents[${index}].parts[${j}]`;
      const kind = kindOf(part, at);
      if (kind === 'text') {
        if (part.thought !== true) text += parseInput(textPartSchema, part, at).text;
        return;
      }
      if (kind === 'functionCall') {
        const call = parseInput(functionCallSchema, part.functionCall, `${at}.functionCall`);
        const id = call.id || `call_${index}_${j}`;
        calls.push({ id, name: call.name, answered: false });
        toolCalls.push({ id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) } });
        return;
      }
      throw badRequest(`${at}.${kind} is not supported in a model turn.`, `${at}.${kind}`, 'unsupported_value');
    });
  }
  return toolCalls.length ? { role: 'assistant', content: text || null, tool_calls: toolCalls } : { role: 'assistant', content: text };
}

function messagesOf(body: GenerateContentRequest): ChatMessage[] {
  const messages: ChatMessage[] = [];
  const system = body.systemInstruction?.parts.map((p, j) => parseInput(textPartSchema, p, `systemInstruction.parts[${j}]`).text).filter(Boolean);
  if (system?.length) messages.push({ role: 'system', content: system.join('\n\n') });
  const calls: PendingCall[] = [];
  let run: Array<{ content: GeminiInboundContent; index: number }> = [];
  const flush = () => {
    if (run.length) messages.push(modelTurn(run, calls));
    run = [];
  };
  body.contents.forEach((content, i) => {
    if (content.role === 'model') return void run.push({ content, index: i });
    flush();
    messages.push(...userTurn(content, `contents[${i}]`, calls));
  });
  flush();
  return messages;
}

function declaredTool(decl: FunctionDeclaration, where: string): ChatTool {
  const parameters =
    decl.parametersJsonSchema ?? (decl.parameters ? fromGeminiSchema(decl.parameters, `${where}.parameters`) : { type: 'object', properties: {} });
  return { type: 'function', function: compact({ name: decl.name, description: decl.description, parameters }) as ChatTool['function'] };
}

function toolFields(body: GenerateContentRequest): Pick<ChatRequest, 'tools' | 'tool_choice'> {
  const tools: ChatTool[] = [];
  (body.tools ?? []).forEach((tool, i) => {
    const other = Object.keys(tool).find((k) => k !== 'functionDeclarations');
    if (other)
      throw badRequest(
        `The Gemini tool '${other}' is not available through the gateway: only functionDeclarations can be translated.`,
        `tools[${i}].${other}`,
        'unsupported_tool',
      );
    (tool.functionDeclarations ?? []).forEach((decl, k) => tools.push(declaredTool(decl, `tools[${i}].functionDeclarations[${k}]`)));
  });
  if (!tools.length) return {};
  const config = body.toolConfig?.functionCallingConfig;
  const allowed = config?.allowedFunctionNames;
  switch (config?.mode) {
    case 'NONE':
      return { tools, tool_choice: 'none' };
    case 'ANY': {
      if (!allowed?.length) return { tools, tool_choice: 'required' };
      const kept = tools.filter((t) => allowed.includes(t.function.name));
      if (!kept.length)
        throw badRequest(
          'toolConfig.functionCallingConfig.allowedFunctionNames names no declared function.',
          'toolConfig.functionCallingConfig.allowedFunctionNames',
          'invalid_value',
        );
      // Chat names one forced function; several allowed ones are the only tools offered, one of them required.
      return kept.length === 1
        ? { tools, tool_choice: { type: 'function', function: { name: kept[0]!.function.name } } }
        : { tools: kept, tool_choice: 'required' };
    }
    case 'AUTO':
    case 'VALIDATED':
      return { tools, tool_choice: 'auto' };
    default:
      return { tools };
  }
}

function responseFormat(config: GenerateContentRequest['generationConfig']): ChatRequest['response_format'] {
  const mime = config?.responseMimeType;
  const schema =
    config?.responseJsonSchema ?? (config?.responseSchema ? fromGeminiSchema(config.responseSchema, 'generationConfig.responseSchema') : undefined);
  if (mime === undefined || mime === 'text/plain') {
    if (schema)
      throw badRequest('A response schema needs generationConfig.responseMimeType "application/json".', 'generationConfig.responseMimeType', 'invalid_value');
    return undefined;
  }
  if (mime !== 'application/json') {
    throw badRequest(
      `generationConfig.responseMimeType '${mime}' is not supported: use application/json or text/plain.`,
      'generationConfig.responseMimeType',
      'unsupported_value',
    );
  }
  return schema ? { type: 'json_schema', json_schema: { name: 'response', schema } } : { type: 'json_object' };
}

/** The chat request for `model` (from the path); `stream` for `:streamGenerateContent`. */
export function geminiToChat(body: GenerateContentRequest, model: string, stream: boolean): ChatRequest {
  if (body.cachedContent !== undefined) {
    throw badRequest(
      'cachedContent (a Gemini context cache) cannot be used through the gateway: send the contents instead.',
      'cachedContent',
      'unsupported_parameter',
    );
  }
  const gen = body.generationConfig;
  if (gen?.candidateCount !== undefined && gen.candidateCount > 1) {
    throw badRequest('generationConfig.candidateCount must be 1: the gateway returns one candidate.', 'generationConfig.candidateCount', 'unsupported_value');
  }
  return compact({
    model,
    messages: messagesOf(body),
    ...toolFields(body),
    max_completion_tokens: gen?.maxOutputTokens,
    stop: gen?.stopSequences?.length ? gen.stopSequences : undefined,
    temperature: gen?.temperature,
    top_p: gen?.topP,
    top_k: gen?.topK,
    seed: gen?.seed,
    presence_penalty: gen?.presencePenalty,
    frequency_penalty: gen?.frequencyPenalty,
    response_format: responseFormat(gen),
    stream: stream || undefined,
    stream_options: stream ? { include_usage: true } : undefined,
  }) as ChatRequest;
}
