import { z } from './validation';

/**
 * The chat completions body as the gateway checks it: the minimum it needs to route and
 * translate, with the shapes of what its translators read (messages, tools, tool choice);
 * everything else is the provider's to judge (its 400 passes through), so new OpenAI fields
 * keep working. A config's `override_params` are held to the same shapes.
 */

/** A content part: its type, and for the types the translators read, what they read. */
const contentPart = z.looseObject({ type: z.string() }).check(
  z.refine((p) => p.type !== 'text' || typeof p.text === 'string', { message: 'a text part needs `text` (a string)', path: ['text'] }),
  z.refine((p) => p.type !== 'image_url' || typeof (p.image_url as { url?: unknown } | undefined)?.url === 'string', {
    message: 'an image_url part needs `image_url.url` (a string)',
    path: ['image_url', 'url'],
  }),
);
const content = z.optional(z.nullable(z.union([z.string(), z.array(contentPart)])));
/** `{name}` of a function tool, a tool call or a forced tool choice. */
const named = z.looseObject({ name: z.string() });
/** A tool of type 'function' (or of no type) has `function.name`; other types pass to providers that know them. */
const isFunctionTool = (t: { type?: unknown }) => t.type === undefined || t.type === 'function';
const message = z
  .looseObject({
    role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
    content,
    tool_calls: z.optional(
      z.nullable(z.array(z.looseObject({ id: z.string(), function: z.looseObject({ name: z.string(), arguments: z.optional(z.nullable(z.string())) }) }))),
    ),
    tool_call_id: z.optional(z.string()),
  })
  .check(
    z.refine((m) => m.role === 'assistant' || m.role === 'function' || (m.content !== undefined && m.content !== null), {
      message: 'this role needs `content` (a string or an array of parts)',
      path: ['content'],
    }),
    z.refine((m) => m.role !== 'tool' || m.tool_call_id !== undefined, { message: 'a tool message needs `tool_call_id`', path: ['tool_call_id'] }),
  );

const fields = {
  model: z.optional(z.string().check(z.minLength(1))),
  messages: z.array(message).check(z.minLength(1)),
  max_tokens: z.optional(z.nullable(z.int().check(z.gte(1)))),
  max_completion_tokens: z.optional(z.nullable(z.int().check(z.gte(1)))),
  tools: z.optional(
    z.nullable(
      z.array(
        z
          .looseObject({ type: z.optional(z.string()), function: z.optional(named) })
          .check(z.refine((t) => !isFunctionTool(t) || t.function !== undefined, { message: 'a function tool needs `function.name`', path: ['function'] })),
      ),
    ),
  ),
  tool_choice: z.optional(
    z.nullable(
      z.union([
        z.string(),
        z
          .looseObject({ type: z.optional(z.string()), function: z.optional(named) })
          .check(
            z.refine((t) => !isFunctionTool(t) || t.function !== undefined, { message: 'a function tool choice needs `function.name`', path: ['function'] }),
          ),
      ]),
    ),
  ),
};

export const chatSchema = z.looseObject({ ...fields, stream: z.optional(z.nullable(z.boolean())) });

/** What embeddings take as `input`. */
export const embeddingsInput = z.union([
  z.string(),
  z.array(z.string()).check(z.minLength(1)),
  z.array(z.number()).check(z.minLength(1)),
  z.array(z.array(z.number())).check(z.minLength(1)),
]);

/**
 * A config's `override_params`: any body parameter, merged over the caller's after the body
 * was checked, so the parameters the gateway itself reads keep their request shapes (a
 * string model, chat messages and tools, embeddings input). Whether to stream is the caller's
 * choice: the answer's shape depends on it.
 */
export const overrideParamsSchema = z.looseObject({ ...fields, messages: z.optional(fields.messages), input: z.optional(embeddingsInput) }).check(
  z.refine((p) => !('stream' in p), {
    message: 'whether to stream is the caller’s choice: `stream` cannot be overridden',
    path: ['stream'],
  }),
);
