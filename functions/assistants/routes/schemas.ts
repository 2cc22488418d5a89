import { badRequest } from '../../shared/errors';
import { z } from '../../shared/validation';
import { isObject } from '../../shared/is-object';

/**
 * Input pieces shared by assistants, threads, messages and runs, with the limits of
 * docs/api.md (each failure is a 400 naming the field). Tools other than `function` are
 * refused by name before parsing (rejectUnsupportedTools), never dropped.
 */

export const MAX_METADATA_PAIRS = 16;
export const MAX_METADATA_KEY = 64;
export const MAX_METADATA_VALUE = 512;
export const MAX_TOOLS = 20;
export const MIN_TOKEN_LIMIT = 256;
/** Messages accepted at once on thread creation or as a run's additional_messages. */
export const MAX_INITIAL_MESSAGES = 32;
/** OpenAI's limit on a message's text. */
export const MAX_TEXT_CHARS = 256_000;

const text = (max: number) => z.string().check(z.maxLength(max));

export const metadataSchema = z.record(z.string(), z.string().check(z.maxLength(MAX_METADATA_VALUE))).check(
  z.refine((m) => Object.keys(m).length <= MAX_METADATA_PAIRS, `expected at most ${MAX_METADATA_PAIRS} key-value pairs`),
  z.refine((m) => Object.keys(m).every((k) => k.length <= MAX_METADATA_KEY), `keys must be at most ${MAX_METADATA_KEY} characters`),
);

export const modelSchema = z.string().check(z.minLength(1), z.maxLength(256));
export const temperatureSchema = z.number().check(z.gte(0), z.lte(2));
export const topPSchema = z.number().check(z.gte(0), z.lte(1));
export const tokenLimitSchema = z.int().check(z.gte(MIN_TOKEN_LIMIT));

const functionTool = z.strictObject({
  type: z.literal('function'),
  function: z.strictObject({
    name: z.string().check(z.regex(/^[a-zA-Z0-9_-]{1,64}$/, 'expected 1-64 letters, digits, underscores or dashes')),
    description: z.optional(text(1024)),
    parameters: z.optional(z.record(z.string(), z.unknown())),
    strict: z.optional(z.nullable(z.boolean())),
  }),
});
export const toolsSchema = z.array(functionTool).check(z.maxLength(MAX_TOOLS));

/** No tool resources exist for function tools; the named kinds are refused earlier. */
export const toolResourcesSchema = z.strictObject({});

export const toolChoiceSchema = z.union([
  z.enum(['none', 'auto', 'required']),
  z.strictObject({ type: z.literal('function'), function: z.strictObject({ name: z.string().check(z.minLength(1)) }) }),
]);

export const responseFormatSchema = z.union([
  z.enum(['auto', 'none']),
  z.strictObject({ type: z.enum(['text', 'json_object']) }),
  z.strictObject({
    type: z.literal('json_schema'),
    json_schema: z.strictObject({
      name: z.string().check(z.regex(/^[a-zA-Z0-9_-]{1,64}$/, 'expected 1-64 letters, digits, underscores or dashes')),
      description: z.optional(z.string()),
      schema: z.optional(z.record(z.string(), z.unknown())),
      strict: z.optional(z.nullable(z.boolean())),
    }),
  }),
]);

export const truncationSchema = z
  .strictObject({
    type: z.enum(['auto', 'last_messages']),
    last_messages: z.optional(z.nullable(z.int().check(z.gte(1)))),
  })
  .check(
    z.refine((t) => t.type !== 'last_messages' || typeof t.last_messages === 'number', {
      message: 'expected `last_messages` (an integer >= 1) when type is `last_messages`',
      path: ['last_messages'],
    }),
  );

const detail = z.optional(z.enum(['auto', 'low', 'high']));
const contentPart = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text'), text: z.string().check(z.minLength(1), z.maxLength(MAX_TEXT_CHARS)) }),
  z.strictObject({ type: z.literal('image_url'), image_url: z.strictObject({ url: z.url(), detail }) }),
  z.strictObject({ type: z.literal('image_file'), image_file: z.strictObject({ file_id: z.string().check(z.minLength(1), z.maxLength(256)), detail }) }),
]);

export const attachmentSchema = z.strictObject({
  file_id: z.string().check(z.minLength(1), z.maxLength(256)),
  tools: z.optional(z.array(z.strictObject({ type: z.enum(['code_interpreter', 'file_search']) }))),
});

/** A message as callers send it (create message, thread.messages, additional_messages). */
export const messageInputSchema = z.strictObject({
  role: z.enum(['user', 'assistant']),
  content: z.union([z.string().check(z.minLength(1), z.maxLength(MAX_TEXT_CHARS)), z.array(contentPart).check(z.minLength(1), z.maxLength(64))]),
  attachments: z.optional(z.nullable(z.array(attachmentSchema).check(z.maxLength(20)))),
  metadata: z.optional(z.nullable(metadataSchema)),
});
export type MessageInput = z.infer<typeof messageInputSchema>;

export const initialMessagesSchema = z.array(messageInputSchema).check(z.maxLength(MAX_INITIAL_MESSAGES));

// ---- tools this gateway does not run yet ------------------------------------------------

const UNSUPPORTED: Record<string, string> = {
  code_interpreter: 'it needs a code sandbox',
  file_search: 'it needs vector stores',
};

function refuse(type: string, field: string): never {
  throw badRequest(
    `Invalid \`${field}\`: the \`${type}\` tool is not supported by this gateway yet (${UNSUPPORTED[type]}); only \`function\` tools can be used with assistants and runs.`,
    field,
    'unsupported_tool',
  );
}

function scanTools(tools: unknown, field: string): void {
  if (!Array.isArray(tools)) return;
  tools.forEach((tool, i) => {
    if (isObject(tool) && typeof tool.type === 'string' && tool.type in UNSUPPORTED) refuse(tool.type, `${field}[${i}].type`);
  });
}

function scanResources(resources: unknown, field: string): void {
  if (!isObject(resources)) return;
  for (const key of Object.keys(resources)) if (key in UNSUPPORTED) refuse(key, `${field}.${key}`);
}

function scanAttachments(attachments: unknown, field: string): void {
  if (!Array.isArray(attachments)) return;
  attachments.forEach((a, j) => isObject(a) && scanTools(a.tools, `${field}[${j}].tools`));
}

function scanMessages(messages: unknown, field: string): void {
  if (!Array.isArray(messages)) return;
  messages.forEach((m, i) => isObject(m) && scanAttachments(m.attachments, `${field}[${i}].attachments`));
}

/**
 * Refuse `code_interpreter` / `file_search` wherever a request can name them (tools,
 * tool_resources, tool_choice, message attachments), with a 400 naming the tool type.
 * Runs on the raw body, before schema parsing, so the message is specific.
 */
export function rejectUnsupportedTools(body: unknown): void {
  if (!isObject(body)) return;
  scanTools(body.tools, 'tools');
  scanResources(body.tool_resources, 'tool_resources');
  const choice = body.tool_choice;
  if (isObject(choice) && typeof choice.type === 'string' && choice.type in UNSUPPORTED) refuse(choice.type, 'tool_choice.type');
  scanAttachments(body.attachments, 'attachments');
  scanMessages(body.messages, 'messages');
  scanMessages(body.additional_messages, 'additional_messages');
  if (isObject(body.thread)) {
    scanResources(body.thread.tool_resources, 'thread.tool_resources');
    scanMessages(body.thread.messages, 'thread.messages');
  }
}
