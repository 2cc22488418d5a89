/**
 * The OpenAI Responses request body. The top level checks what the gateway itself reads;
 * input items and tools are checked one by one during translation (request.ts) with the
 * schemas below, so an error names the exact item and a passed-through provider still
 * receives item types the gateway does not know.
 */
import { z } from '../../shared/validation';

const nullish = <T extends z.ZodMiniType>(schema: T) => z.optional(z.nullable(schema));
const nonEmpty = () => z.string().check(z.minLength(1));

export const inputTextPartSchema = z.looseObject({ type: z.literal('input_text'), text: z.string() });
export const inputImagePartSchema = z.looseObject({
  type: z.literal('input_image'),
  image_url: nullish(z.string()),
  file_id: nullish(z.string()),
  detail: nullish(z.string()),
});
export const inputFilePartSchema = z.looseObject({
  type: z.literal('input_file'),
  file_data: nullish(z.string()),
  file_id: nullish(z.string()),
  file_url: nullish(z.string()),
  filename: nullish(z.string()),
});
export const outputTextPartSchema = z.looseObject({ type: z.literal('output_text'), text: z.string() });
export const refusalPartSchema = z.looseObject({ type: z.literal('refusal'), refusal: z.string() });

export const contentPartSchema = z.discriminatedUnion('type', [
  inputTextPartSchema,
  inputImagePartSchema,
  inputFilePartSchema,
  outputTextPartSchema,
  refusalPartSchema,
]);
export type ResponsesContentPart = z.infer<typeof contentPartSchema>;

/** `{role, content}` (the "easy" message) or `{type: "message", role, content}`. */
export const messageItemSchema = z.looseObject({
  type: z.optional(z.literal('message')),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([z.string(), z.array(contentPartSchema)]),
});
export const functionCallItemSchema = z.looseObject({
  type: z.literal('function_call'),
  call_id: nonEmpty(),
  name: nonEmpty(),
  arguments: z.string(),
});
export const functionCallOutputItemSchema = z.looseObject({
  type: z.literal('function_call_output'),
  call_id: nonEmpty(),
  output: z.union([z.string(), z.array(contentPartSchema)]),
});

export const functionToolSchema = z.looseObject({
  type: z.literal('function'),
  name: nonEmpty(),
  description: nullish(z.string()),
  parameters: nullish(z.record(z.string(), z.unknown())),
  strict: nullish(z.boolean()),
});
export type ResponsesFunctionTool = z.infer<typeof functionToolSchema>;

export const jsonSchemaFormatSchema = z.looseObject({
  type: z.literal('json_schema'),
  name: nonEmpty(),
  schema: z.record(z.string(), z.unknown()),
  description: nullish(z.string()),
  strict: nullish(z.boolean()),
});

/** Any input item: a message without `type`, or a typed item checked during translation. */
const inputItemSchema = z.looseObject({ type: z.optional(z.string()) });
export type ResponsesItem = z.infer<typeof inputItemSchema>;

export const responsesRequestSchema = z.looseObject({
  model: z.optional(nonEmpty()),
  input: z.optional(z.union([z.string(), z.array(inputItemSchema)])),
  instructions: nullish(z.string()),
  max_output_tokens: nullish(z.int().check(z.gte(1))),
  temperature: nullish(z.number().check(z.gte(0), z.lte(2))),
  top_p: nullish(z.number().check(z.gte(0), z.lte(1))),
  tools: z.optional(z.array(z.looseObject({ type: z.string() }))),
  tool_choice: z.optional(z.union([z.enum(['none', 'auto', 'required']), z.looseObject({ type: z.string() })])),
  parallel_tool_calls: nullish(z.boolean()),
  text: nullish(
    z.looseObject({
      format: nullish(z.looseObject({ type: z.enum(['text', 'json_object', 'json_schema']) })),
      verbosity: nullish(z.enum(['low', 'medium', 'high'])),
    }),
  ),
  reasoning: nullish(
    z.looseObject({
      effort: nullish(z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh'])),
      summary: nullish(z.string()),
    }),
  ),
  metadata: nullish(z.record(z.string(), z.string())),
  user: z.optional(z.string()),
  stream: nullish(z.boolean()),
  store: nullish(z.boolean()),
  previous_response_id: nullish(nonEmpty()),
});
export type ResponsesRequest = z.infer<typeof responsesRequestSchema>;
