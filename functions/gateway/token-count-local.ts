/**
 * Token counts made without a provider call (docs/token-counting.md):
 *
 * - `tokenizer`: OpenAI-family models, with `gpt-tokenizer` and the model's encoding
 *   (cl100k_base for gpt-4 and gpt-3.5, o200k_base otherwise), counting the chat framing as
 *   OpenAI does (3 tokens per message, 1 more for a name, 3 to prime the reply) and tool
 *   definitions as the TypeScript-like `namespace functions` text OpenAI renders them to
 *   (gpt-tokenizer's `computeChatCompletionTokenCount`, the cookbook's approximation).
 * - `estimate`: every other model, `ceil(characters / 4)` of the request's text plus
 *   the same framing.
 *
 * An image or file part counts IMAGE_TOKENS either way: its real cost depends on its size,
 * which the gateway does not decode. The encodings (1-2 MB each) load on the first count.
 */
import type { ChatMessage, ChatRequest, ContentPart } from '../providers/types';
import { isObject } from '../shared/is-object';

/** What an image or file part counts (OpenAI's price of a low-detail image). */
export const IMAGE_TOKENS = 85;
/** Framing of the estimate, as the tokenizer's: per message, and once to prime the reply. */
const MESSAGE_FRAMING = 3;
const REPLY_FRAMING = 3;
const CHARS_PER_TOKEN = 4;

/** Model ids (after an `openai/` vendor prefix) whose tokenizer is published: gpt-*, o1/o3/o4, chatgpt-*, text-embedding-*. */
const OPENAI_MODEL = /^(?:gpt-|o[134](?:$|-)|chatgpt-|text-embedding-|davinci|babbage)/i;
/** The models on cl100k_base; gpt-4o, gpt-4.1, gpt-4.5, gpt-5 and the o-series are on o200k_base. */
const CL100K_MODEL = /^(?:gpt-4(?:$|-(?!o))|gpt-3\.5|text-embedding-(?:ada-002|3-))/i;

const bareModel = (model: string) => model.replace(/^openai\//i, '');

/** The model is one of OpenAI's, whatever provider serves it. */
export const isOpenAIModel = (model: string): boolean => OPENAI_MODEL.test(bareModel(model));

type Encoding = 'o200k_base' | 'cl100k_base';
export const encodingOf = (model: string): Encoding => (CL100K_MODEL.test(bareModel(model)) ? 'cl100k_base' : 'o200k_base');

type Counter = (text: string) => number;
const counters = new Map<Encoding, Promise<Counter>>();

/** Text counts as plain text, special-token look-alikes included (as the API treats a caller's text). */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

function counterFor(encoding: Encoding): Promise<Counter> {
  let counter = counters.get(encoding);
  if (!counter) {
    // Two literal imports, so the bundler makes each encoding a chunk of its own, loaded on first use.
    const loaded = encoding === 'cl100k_base' ? import('gpt-tokenizer/encoding/cl100k_base') : import('gpt-tokenizer/encoding/o200k_base');
    counter = loaded.then((m) => (text: string) => (text ? m.countTokens(text, PLAIN_TEXT) : 0));
    counter.catch(() => counters.delete(encoding));
    counters.set(encoding, counter);
  }
  return counter;
}

const isMedia = (part: ContentPart) => part.type !== 'text';

/** The text of a message's content, and how many image or file parts it has. */
function contentOf(content: string | ContentPart[] | null | undefined): { text: string; media: number } {
  if (content == null) return { text: '', media: 0 };
  if (typeof content === 'string') return { text: content, media: 0 };
  const text = content
    .filter((p) => p.type === 'text')
    .map((p) => String((p as { text?: unknown }).text ?? ''))
    .join('\n');
  return { text, media: content.filter(isMedia).length };
}

/** A chat message as the tokenizer's function-calling counter takes it: text content, tool calls as a function call. */
function flatMessage(message: ChatMessage): { role: string; content: string; name?: string; function_call?: { name: string; arguments: string } } {
  const { text } = contentOf(message.content);
  const name = 'name' in message ? message.name : undefined;
  const calls = message.role === 'assistant' ? (message.tool_calls ?? []) : [];
  // Several calls are counted as one function call of their names and arguments together.
  const function_call = calls.length
    ? { name: calls.map((c) => c.function.name).join(' '), arguments: calls.map((c) => c.function.arguments).join('\n') }
    : undefined;
  return { role: message.role, content: text, ...(name ? { name } : {}), ...(function_call ? { function_call } : {}) };
}

const mediaOf = (chat: ChatRequest) => chat.messages.reduce((n, m) => n + contentOf(m.content).media, 0);

/**
 * A parameters schema as the tokenizer's formatter reads it: objects where it expects objects
 * and lists where it expects lists. A caller's malformed schema (`properties: [null]`,
 * `required: 7`) is counted as "any" where it is wrong, not thrown on.
 */
function countableSchema(schema: unknown): Record<string, unknown> {
  if (!isObject(schema)) return {};
  const { properties, items, required, enum: values, description, ...rest } = schema;
  return {
    ...rest,
    ...(isObject(properties) ? { properties: Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, countableSchema(v)])) } : {}),
    ...(items !== undefined ? { items: countableSchema(items) } : {}),
    ...(Array.isArray(required) ? { required } : {}),
    ...(Array.isArray(values) ? { enum: values } : {}),
    ...(typeof description === 'string' ? { description } : {}),
  };
}

/** The structured-output schema is sent to the model as text too: counted like a tool definition. */
function functionsOf(chat: ChatRequest) {
  const functions = (chat.tools ?? []).map((t) => ({
    name: t.function.name,
    description: t.function.description,
    parameters: countableSchema(t.function.parameters),
  }));
  const schema = chat.response_format?.type === 'json_schema' ? chat.response_format.json_schema : undefined;
  if (schema) functions.push({ name: schema.name, description: undefined, parameters: countableSchema(schema.schema) });
  return functions;
}

/** OpenAI-family models: their tokenizer, chat framing and tool definitions. */
export async function tokenizerCount(chat: ChatRequest): Promise<number> {
  const count = await counterFor(encodingOf(chat.model));
  const { computeChatCompletionTokenCount } = await import('gpt-tokenizer/functionCalling');
  const choice = chat.tool_choice;
  const function_call =
    choice === 'none' ? ('none' as const) : choice && typeof choice === 'object' && choice.function ? { name: choice.function.name } : undefined;
  const functions = functionsOf(chat);
  const request = {
    messages: chat.messages.map(flatMessage),
    // The schemas are shaped for the formatter by countableSchema (its types want `type: 'object'`).
    ...(functions.length ? { functions: functions as unknown as Parameters<typeof computeChatCompletionTokenCount>[0]['functions'] } : {}),
    ...(function_call ? { function_call } : {}),
  };
  return computeChatCompletionTokenCount(request, count) + mediaOf(chat) * IMAGE_TOKENS;
}

/** Any other model: a quarter of the characters of the request's text, plus the framing. */
export function estimateCount(chat: ChatRequest): number {
  let chars = 0;
  for (const message of chat.messages) {
    const flat = flatMessage(message);
    chars += flat.role.length + flat.content.length + (flat.name?.length ?? 0);
    if (flat.function_call) chars += flat.function_call.name.length + flat.function_call.arguments.length;
  }
  const functions = functionsOf(chat);
  if (functions.length) chars += JSON.stringify(functions).length;
  return Math.ceil(chars / CHARS_PER_TOKEN) + chat.messages.length * MESSAGE_FRAMING + REPLY_FRAMING + mediaOf(chat) * IMAGE_TOKENS;
}
