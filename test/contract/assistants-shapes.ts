import { z } from 'zod';

/**
 * The Assistants v2 objects as the spec states them (gateway-api.md,,,
 *; the providers' API references). Strict: every required field present, nothing extra,
 * `null` exactly where the spec allows it. Reusable by any test that reads these objects.
 */

const unixSeconds = z.number().int().nonnegative();
const nullableTs = unixSeconds.nullable();

/** 16 pairs, keys <= 64 characters, values <= 512 characters. */
export const MetadataShape = z.record(z.string().max(64), z.string().max(512)).refine((m) => Object.keys(m).length <= 16, 'at most 16 metadata pairs');

export const FunctionToolShape = z.strictObject({
  type: z.literal('function'),
  function: z.object({
    name: z.string(),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullable().optional(),
  }),
});

const detail = z.enum(['auto', 'low', 'high']);
export const MessageContentShape = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('image_file'), image_file: z.strictObject({ file_id: z.string(), detail }) }),
  z.strictObject({ type: z.literal('image_url'), image_url: z.strictObject({ url: z.string(), detail }) }),
  z.strictObject({ type: z.literal('text'), text: z.strictObject({ value: z.string(), annotations: z.array(z.unknown()) }) }),
  z.strictObject({ type: z.literal('refusal'), refusal: z.string() }),
]);

/** Thread message. */
export const MessageShape = z.strictObject({
  id: z.string().startsWith('msg_'),
  object: z.literal('thread.message'),
  created_at: unixSeconds,
  thread_id: z.string().startsWith('thread_'),
  status: z.enum(['in_progress', 'incomplete', 'completed']),
  incomplete_details: z.strictObject({ reason: z.string() }).nullable(),
  completed_at: nullableTs,
  incomplete_at: nullableTs,
  role: z.enum(['user', 'assistant']),
  content: z.array(MessageContentShape),
  assistant_id: z.string().nullable(),
  run_id: z.string().nullable(),
  attachments: z.array(z.strictObject({ file_id: z.string(), tools: z.array(z.strictObject({ type: z.string() })) })).nullable(),
  metadata: MetadataShape,
});

const RUN_STATUSES = ['queued', 'in_progress', 'requires_action', 'cancelling', 'cancelled', 'failed', 'completed', 'incomplete', 'expired'] as const;
export const TERMINAL = ['cancelled', 'failed', 'completed', 'incomplete', 'expired'] as const;

const ToolCallShape = z.strictObject({
  id: z.string(),
  type: z.literal('function'),
  function: z.strictObject({ name: z.string(), arguments: z.string() }),
});
const UsageShape = z.strictObject({ completion_tokens: z.number().int(), prompt_tokens: z.number().int(), total_tokens: z.number().int() });

/** Run. */
export const RunShape = z
  .strictObject({
    id: z.string().startsWith('run_'),
    object: z.literal('thread.run'),
    created_at: unixSeconds,
    thread_id: z.string().startsWith('thread_'),
    assistant_id: z.string().startsWith('asst_'),
    status: z.enum(RUN_STATUSES),
    required_action: z
      .strictObject({ type: z.literal('submit_tool_outputs'), submit_tool_outputs: z.strictObject({ tool_calls: z.array(ToolCallShape) }) })
      .nullable(),
    last_error: z.strictObject({ code: z.string(), message: z.string() }).nullable(),
    expires_at: nullableTs,
    started_at: nullableTs,
    cancelled_at: nullableTs,
    failed_at: nullableTs,
    completed_at: nullableTs,
    incomplete_details: z.strictObject({ reason: z.string() }).nullable(),
    model: z.string(),
    instructions: z.string(),
    tools: z.array(FunctionToolShape).max(20),
    metadata: MetadataShape,
    usage: UsageShape.nullable(),
    max_prompt_tokens: z.number().int().min(256).nullable(),
    max_completion_tokens: z.number().int().min(256).nullable(),
    truncation_strategy: z.strictObject({ type: z.enum(['auto', 'last_messages']), last_messages: z.number().int().nullable() }),
    tool_choice: z.union([z.enum(['none', 'auto', 'required']), z.object({ type: z.string() })]),
    parallel_tool_calls: z.boolean(),
    response_format: z.union([z.enum(['none', 'auto']), z.object({ type: z.string() })]),
    temperature: z.number().min(0).max(2).nullable(),
    top_p: z.number().min(0).max(1).nullable(),
  })
  .refine((r) => (TERMINAL as readonly string[]).includes(r.status) || r.usage === null, 'usage is null until the run is terminal')
  .refine((r) => (r.status === 'requires_action') === (r.required_action !== null), 'required_action is set exactly in requires_action')
  .refine((r) => (r.status === 'incomplete') === (r.incomplete_details !== null), 'incomplete_details is set exactly when incomplete');

export const AssistantShape = z.strictObject({
  id: z.string().startsWith('asst_'),
  object: z.literal('assistant'),
  created_at: unixSeconds,
  name: z.string().nullable(),
  description: z.string().nullable(),
  model: z.string(),
  instructions: z.string().nullable(),
  tools: z.array(FunctionToolShape).max(20),
  tool_resources: z.record(z.string(), z.unknown()).nullable(),
  metadata: MetadataShape,
  temperature: z.number().nullable(),
  top_p: z.number().nullable(),
  response_format: z.union([z.enum(['none', 'auto']), z.object({ type: z.string() })]),
  /** Gateway extension: the bound managed provider. */
  provider: z.string().regex(/^@[a-z0-9][a-z0-9-]*$/),
});

export const ThreadShape = z.strictObject({
  id: z.string().startsWith('thread_'),
  object: z.literal('thread'),
  created_at: unixSeconds,
  tool_resources: z.record(z.string(), z.unknown()).nullable(),
  metadata: MetadataShape,
});

export const RunStepShape = z.strictObject({
  id: z.string().startsWith('step_'),
  object: z.literal('thread.run.step'),
  created_at: unixSeconds,
  run_id: z.string(),
  assistant_id: z.string(),
  thread_id: z.string(),
  type: z.enum(['message_creation', 'tool_calls']),
  status: z.enum(['in_progress', 'cancelled', 'failed', 'completed', 'expired']),
  cancelled_at: nullableTs,
  completed_at: nullableTs,
  expired_at: nullableTs,
  failed_at: nullableTs,
  last_error: z.strictObject({ code: z.string(), message: z.string() }).nullable(),
  step_details: z.union([
    z.strictObject({ type: z.literal('message_creation'), message_creation: z.strictObject({ message_id: z.string() }) }),
    z.strictObject({ type: z.literal('tool_calls'), tool_calls: z.array(z.unknown()) }),
  ]),
  usage: UsageShape.nullable(),
  metadata: MetadataShape,
});

/** List envelope: all four fields required. */
export const listShape = <T extends z.ZodType>(item: T) =>
  z.strictObject({
    object: z.literal('list'),
    data: z.array(item),
    first_id: z.string().nullable(),
    last_id: z.string().nullable(),
    has_more: z.boolean(),
  });

export const deletedShape = (object: string) => z.strictObject({ id: z.string(), object: z.literal(object), deleted: z.literal(true) });
