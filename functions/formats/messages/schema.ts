/**
 * The Anthropic Messages request body. The top level is checked here; content blocks and
 * tools are checked one by one during translation (request.ts) with the schemas below, so
 * an error names the exact block. Unknown fields are let through (a passed-through
 * Anthropic judges them itself).
 */
import { z } from '../../shared/validation';

const nonEmpty = () => z.string().check(z.minLength(1));

export const textBlockSchema = z.looseObject({ type: z.literal('text'), text: z.string() });
export const imageBlockSchema = z.looseObject({
  type: z.literal('image'),
  source: z.discriminatedUnion('type', [
    z.looseObject({ type: z.literal('base64'), media_type: nonEmpty(), data: z.string() }),
    z.looseObject({ type: z.literal('url'), url: nonEmpty() }),
  ]),
});
export const documentBlockSchema = z.looseObject({
  type: z.literal('document'),
  source: z.looseObject({ type: z.string() }),
  title: z.optional(z.nullable(z.string())),
});
export const toolUseBlockSchema = z.looseObject({
  type: z.literal('tool_use'),
  id: nonEmpty(),
  name: nonEmpty(),
  input: z.record(z.string(), z.unknown()),
});
export const toolResultBlockSchema = z.looseObject({
  type: z.literal('tool_result'),
  tool_use_id: nonEmpty(),
  content: z.optional(z.union([z.string(), z.array(z.looseObject({ type: z.string() }))])),
  is_error: z.optional(z.boolean()),
});

const block = z.looseObject({ type: z.string() });
export type MessagesBlock = z.infer<typeof block>;

export const customToolSchema = z.looseObject({
  type: z.optional(z.nullable(z.literal('custom'))),
  name: nonEmpty(),
  description: z.optional(z.string()),
  input_schema: z.record(z.string(), z.unknown()),
});

export const messagesRequestSchema = z.looseObject({
  model: nonEmpty(),
  max_tokens: z.int().check(z.gte(1)),
  messages: z
    .array(
      z.looseObject({
        role: z.enum(['user', 'assistant']),
        content: z.union([z.string(), z.array(block)]),
      }),
    )
    .check(z.minLength(1)),
  system: z.optional(z.union([z.string(), z.array(textBlockSchema)])),
  tools: z.optional(z.array(z.looseObject({ name: z.string(), type: z.optional(z.nullable(z.string())) }))),
  tool_choice: z.optional(
    z.discriminatedUnion('type', [
      z.looseObject({ type: z.literal('auto'), disable_parallel_tool_use: z.optional(z.boolean()) }),
      z.looseObject({ type: z.literal('any'), disable_parallel_tool_use: z.optional(z.boolean()) }),
      z.looseObject({ type: z.literal('tool'), name: nonEmpty(), disable_parallel_tool_use: z.optional(z.boolean()) }),
      z.looseObject({ type: z.literal('none') }),
    ]),
  ),
  stop_sequences: z.optional(z.array(z.string())),
  temperature: z.optional(z.number().check(z.gte(0), z.lte(1))),
  top_p: z.optional(z.number().check(z.gte(0), z.lte(1))),
  top_k: z.optional(z.int().check(z.gte(0))),
  thinking: z.optional(
    z.looseObject({
      type: z.enum(['enabled', 'disabled', 'adaptive', 'between_tools']),
      budget_tokens: z.optional(z.int().check(z.gte(0))),
    }),
  ),
  output_config: z.optional(
    z.looseObject({
      effort: z.optional(z.nullable(z.enum(['low', 'medium', 'high', 'xhigh', 'max']))),
      format: z.optional(z.nullable(z.looseObject({ type: z.literal('json_schema'), schema: z.record(z.string(), z.unknown()) }))),
    }),
  ),
  metadata: z.optional(z.looseObject({ user_id: z.optional(z.nullable(z.string())) })),
  stream: z.optional(z.boolean()),
});
export type MessagesRequest = z.infer<typeof messagesRequestSchema>;

/** `/v1/messages/count_tokens`: a Messages body without `max_tokens`, which a count does not take. */
export const countTokensRequestSchema = z.looseObject({ ...messagesRequestSchema.shape, max_tokens: z.optional(z.int().check(z.gte(1))) });
