/**
 * The deterministic "model" behind every fake: each provider fake turns its request into a
 * Conversation, asks `answer()` what to say and renders it in its own wire format.
 *
 * - Last turn is a tool result          -> text `tool said: <tool output>`
 * - Tools given and the last user text mentions "weather" (or the model contains
 *   `fake-tools`, or tool choice forces a call) -> a call to `get_weather` (or the forced / first tool)
 *                                            with arguments `{"location":"<city>"}`
 * - Otherwise                            -> text `echo: <last user text>`
 * A max-tokens limit below the answer's word count truncates it (finish `length`).
 * A last user text containing `[content-filter]` stops the answer after its first word
 * (finish `content_filter`).
 * Tokens are words: prompt = words of every turn, completion = words of the answer
 * (for a tool call: of its JSON arguments).
 */
import { createHash } from 'node:crypto';

export interface Turn {
  role: 'system' | 'user' | 'assistant' | 'tool';
  text: string;
}

export interface Conversation {
  model: string;
  turns: Turn[];
  /** Names of the tools offered (leave empty when the caller said tool choice "none"). */
  tools: string[];
  /** Tool choice forced a call: a tool name, or '' for "any tool". */
  forceTool?: string;
  maxTokens?: number;
  /** Input schemas of the offered tools by name: a call's arguments follow its tool's schema. */
  toolSchemas?: Record<string, unknown>;
  /** Structured output asked for (a JSON Schema; `{}` for any JSON object): the text answer is JSON. */
  jsonSchema?: unknown;
}

export type Answer =
  | { kind: 'text'; text: string; pieces: string[]; finish: 'stop' | 'length' | 'content_filter'; completionTokens: number }
  | {
      kind: 'tool';
      /** Deterministic id suffix; each provider adds its own prefix (`call_`, `toolu_`, …). */
      idSuffix: string;
      name: string;
      args: Record<string, unknown>;
      argsJson: string;
      /** `argsJson` split into stream fragments. */
      fragments: string[];
      completionTokens: number;
    };

export function wordCount(text: string): number {
  return text.match(/\S+/g)?.length ?? 0;
}

/** Split text into stream pieces: one word with its trailing space each. */
export function pieces(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text ? [text] : []);
}

export function hash(text: string, len = 12): string {
  return createHash('sha256').update(text).digest('hex').slice(0, len);
}

export function promptTokens(conv: Conversation): number {
  return conv.turns.reduce((n, t) => n + wordCount(t.text), 0);
}

/** Text of the last user turn. */
export function lastUserText(conv: Conversation): string {
  for (let i = conv.turns.length - 1; i >= 0; i--) if (conv.turns[i]!.role === 'user') return conv.turns[i]!.text;
  return '';
}

export function answer(conv: Conversation): Answer {
  const last = [...conv.turns].reverse().find((t) => t.role === 'user' || t.role === 'tool');
  if (last?.role === 'tool') return textAnswer(`tool said: ${last.text}`, conv.maxTokens);
  const text = last?.text ?? '';
  if (conv.tools.length > 0 && (conv.forceTool !== undefined || /weather/i.test(text) || conv.model.includes('fake-tools'))) {
    const name = conv.forceTool || (conv.tools.includes('get_weather') ? 'get_weather' : conv.tools[0]!);
    const city = /weather\s+(?:in|for|at)\s+([^?.!,\n]+)/i.exec(text)?.[1]?.trim() ?? 'Boston, MA';
    const schema = conv.toolSchemas?.[name];
    // A tool that declares its properties gets them filled; one that declares none, a location.
    const declares = Object.keys(((schema ?? {}) as { properties?: object }).properties ?? {}).length > 0;
    const args = declares ? (valueFor(schema, city, text) as Record<string, unknown>) : { location: city };
    const argsJson = JSON.stringify(args);
    const fragments: string[] = [];
    for (let i = 0; i < argsJson.length; i += 8) fragments.push(argsJson.slice(i, i + 8));
    return { kind: 'tool', idSuffix: hash(`${name}:${text}`), name, args, argsJson, fragments, completionTokens: wordCount(argsJson) };
  }
  if (conv.jsonSchema !== undefined) {
    const city = /weather\s+(?:in|for|at)\s+([^?.!,\n]+)/i.exec(text)?.[1]?.trim() ?? 'Boston, MA';
    return textAnswer(JSON.stringify(valueFor(conv.jsonSchema, city, text)), conv.maxTokens);
  }
  return textAnswer(`echo: ${text}`, conv.maxTokens);
}

/**
 * A value that satisfies a (simple) JSON Schema, as a model following it would give:
 * every declared property filled, `location` with the city the prompt names.
 */
export function valueFor(schema: unknown, city: string, text: string, key?: string): unknown {
  // A schema that is not an object (`true`, or a caller's mistake) constrains nothing.
  const s = (schema !== null && typeof schema === 'object' && !Array.isArray(schema) ? schema : {}) as Record<string, unknown>;
  if (Array.isArray(s.enum)) return s.enum[0];
  if ('const' in s) return s.const;
  const variants = (s.anyOf ?? s.oneOf) as unknown[] | undefined;
  if (Array.isArray(variants) && variants.length) return valueFor(variants[0], city, text, key);
  const declared = Array.isArray(s.type) ? s.type[0] : s.type;
  // Gemini's schema dialect spells types in capitals (OBJECT, STRING).
  const type = typeof declared === 'string' ? declared.toLowerCase() : declared;
  if (type === 'object' || s.properties) {
    const props = (s.properties !== null && typeof s.properties === 'object' ? s.properties : {}) as Record<string, unknown>;
    const names = Object.keys(props);
    if (!names.length) return { answer: `echo: ${text}` };
    return Object.fromEntries(names.map((n) => [n, valueFor(props[n], city, text, n)]));
  }
  if (type === 'array') return [valueFor(s.items, city, text, key)];
  if (type === 'integer' || type === 'number') return 42;
  if (type === 'boolean') return true;
  if (type === 'null') return null;
  return key === 'location' ? city : `echo: ${text}`;
}

function textAnswer(full: string, maxTokens: number | undefined): Answer {
  let parts = pieces(full);
  let finish: 'stop' | 'length' | 'content_filter' = 'stop';
  if (full.includes('[content-filter]')) {
    parts = parts.slice(0, 1);
    finish = 'content_filter';
  } else if (maxTokens !== undefined && maxTokens >= 0 && parts.length > maxTokens) {
    parts = parts.slice(0, maxTokens);
    if (parts.length) parts[parts.length - 1] = parts[parts.length - 1]!.trimEnd();
    finish = 'length';
  }
  const text = parts.join('');
  return { kind: 'text', text, pieces: parts, finish, completionTokens: wordCount(text) };
}

/** A deterministic unit vector for a text (`dims` defaults to 8). */
export function embed(text: string, dims = 8): number[] {
  const out: number[] = [];
  let block = Buffer.alloc(0);
  for (let i = 0; i < dims; i++) {
    if (i % 32 === 0)
      block = createHash('sha256')
        .update(`${i / 32}:${text}`)
        .digest();
    out.push((block[i % 32]! / 255) * 2 - 1);
  }
  const norm = Math.hypot(...out) || 1;
  return out.map((v) => Math.round((v / norm) * 1e6) / 1e6);
}

/** Float32 little-endian base64, as OpenAI's `encoding_format: "base64"`. */
export function embedBase64(vector: number[]): string {
  return Buffer.from(new Float32Array(vector).buffer).toString('base64');
}

/** Relevance of a document to a query in (0, 1): share of query words found in the doc. */
export function relevance(query: string, doc: string): number {
  const words = (s: string) => new Set(s.toLowerCase().match(/[a-z0-9]+/g) ?? []);
  const q = words(query);
  const d = words(doc);
  let hits = 0;
  for (const w of q) if (d.has(w)) hits++;
  return Math.round(((hits + 1) / (q.size + 2)) * 1e4) / 1e4;
}

/** Rank documents by relevance (stable on ties), keep the top `n`. */
export function rank(query: string, docs: string[], n?: number): Array<{ index: number; score: number }> {
  const scored = docs.map((d, index) => ({ index, score: relevance(query, d) }));
  scored.sort((a, b) => b.score - a.score || a.index - b.index);
  return n === undefined ? scored : scored.slice(0, n);
}

/** Text of OpenAI-style content: a string or an array of `{type:"text",text}` parts. */
export function partsText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content === null || content === undefined ? '' : JSON.stringify(content);
  return content
    .map((p) => {
      if (typeof p === 'string') return p;
      const part = p as { text?: unknown } | null;
      return typeof part?.text === 'string' ? part.text : '';
    })
    .filter((t) => t !== '')
    .join(' ');
}
