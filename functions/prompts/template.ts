import { badRequest } from '../shared/errors';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../shared/json-depth';
import { renderString, templateSyntaxError, type Variables } from './render';
import { isObject } from '../shared/is-object';

/**
 * A template `string` describes the messages of a chat request: either a JSON array of
 * `{role, content, name?}` messages, or — when the string is not a JSON array — the text
 * of one user message. Variables are substituted AFTER the JSON is parsed, into each
 * string inside a message's `content` (a string, or the string fields of content parts
 * other than `type`), so no value can change the structure. Other message fields
 * (`role`, `name`, `tool_calls`, ...) are kept as written.
 */

export const MESSAGE_ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'] as const;

export interface TemplateMessage {
  role: (typeof MESSAGE_ROLES)[number];
  content?: unknown;
  name?: string;
  [field: string]: unknown;
}

function jsonArray(template: string): unknown[] | undefined {
  if (!template.trimStart().startsWith('[')) return undefined;
  if (nestsDeeperThan(template)) {
    throw badRequest(`Invalid \`string\`: the message array nests more than ${MAX_JSON_DEPTH} levels deep.`, 'string', 'json_too_deep');
  }
  try {
    const parsed: unknown = JSON.parse(template);
    return Array.isArray(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Why a message array is not usable, or undefined when it is. */
function messageProblem(items: unknown[]): string | undefined {
  if (items.length === 0) return 'the message array is empty';
  for (const [i, item] of items.entries()) {
    if (!isObject(item)) return `message [${i}] is not an object`;
    if (typeof item.role !== 'string' || !(MESSAGE_ROLES as readonly string[]).includes(item.role)) {
      return `message [${i}] needs a \`role\` of ${MESSAGE_ROLES.join(', ')}`;
    }
    const c = item.content;
    if (c !== undefined && c !== null && typeof c !== 'string' && !Array.isArray(c)) {
      return `message [${i}] \`content\` must be a string or an array of content parts`;
    }
    if (item.name !== undefined && typeof item.name !== 'string') return `message [${i}] \`name\` must be a string`;
  }
  return undefined;
}

/** The messages a template describes (not rendered). Throws a 400 naming `string` when unusable. */
export function templateMessages(template: string): TemplateMessage[] {
  const items = jsonArray(template);
  if (!items) return [{ role: 'user', content: template }];
  const problem = messageProblem(items);
  if (problem) throw badRequest(`Invalid \`string\`: ${problem}.`, 'string', 'invalid_template');
  return items as TemplateMessage[];
}

/** Every string a render substitutes into, with a path for error messages. */
function* contentStrings(messages: readonly TemplateMessage[]): Generator<{ path: string; text: string }> {
  function* walk(value: unknown, path: string): Generator<{ path: string; text: string }> {
    if (typeof value === 'string') yield { path, text: value };
    else if (Array.isArray(value)) for (const [i, v] of value.entries()) yield* walk(v, `${path}[${i}]`);
    else if (isObject(value)) {
      for (const [k, v] of Object.entries(value)) if (k !== 'type') yield* walk(v, `${path}.${k}`);
    }
  }
  for (const [i, m] of messages.entries()) yield* walk(m.content, `[${i}].content`);
}

/** Check a template at save time: structure, and Mustache syntax unless it is raw. */
export function validateTemplate(template: string, raw: boolean): void {
  const messages = templateMessages(template);
  if (raw) return;
  for (const { path, text } of contentStrings(messages)) {
    const error = templateSyntaxError(text);
    if (error) {
      const where = jsonArray(template) ? ` in message ${path}` : '';
      throw badRequest(`Invalid \`string\`: Mustache syntax error${where}: ${error}.`, 'string', 'invalid_template');
    }
  }
}

function mapStrings(value: unknown, fn: (text: string) => string): unknown {
  if (typeof value === 'string') return fn(value);
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, fn));
  if (isObject(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, k === 'type' ? v : mapStrings(v, fn)]));
  }
  return value;
}

/**
 * The chat messages for these variables. Raw templates (`is_raw_template: 1`) are used as
 * written. Missing required variables (render.ts states the rule) are a 400 listing all of them.
 */
export function renderMessages(template: string, variables: Variables, raw: boolean): TemplateMessage[] {
  const messages = templateMessages(template);
  if (raw) return messages;
  const missing = new Set<string>();
  const rendered = messages.map((m) => {
    if (m.content === undefined || m.content === null) return m;
    const content = mapStrings(m.content, (text) => {
      let result: ReturnType<typeof renderString>;
      try {
        result = renderString(text, variables);
      } catch (err) {
        throw badRequest(`Invalid template: Mustache syntax error: ${(err as Error).message}.`, 'string', 'invalid_template');
      }
      for (const name of result.missing) missing.add(name);
      return result.text;
    });
    return { ...m, content };
  });
  if (missing.size) {
    const names = [...missing];
    throw badRequest(`Missing required variable(s): ${names.join(', ')}. Send them in \`variables\`.`, 'variables', 'missing_variables');
  }
  return rendered;
}
