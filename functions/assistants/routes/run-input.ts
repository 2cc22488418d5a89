import { badRequest } from '../../shared/errors';
import { z } from '../../shared/validation';
import { providerSlugOf } from '../store/assistants';
import { requireManagedProvider } from '../credentials';
import type { RunSpec } from '../store/runs';
import {
  initialMessagesSchema,
  metadataSchema,
  modelSchema,
  responseFormatSchema,
  temperatureSchema,
  tokenLimitSchema,
  toolChoiceSchema,
  toolResourcesSchema,
  toolsSchema,
  topPSchema,
  truncationSchema,
} from './schemas';
import type { Assistant, Tool, ToolChoice } from '../types';

/** Bodies of create run (`POST /threads/{id}/runs`) and create thread-and-run. */

const opt = <T extends z.ZodMiniType>(schema: T) => z.optional(z.nullable(schema));

const runFields = {
  assistant_id: z.string().check(z.minLength(1), z.maxLength(128)),
  model: opt(modelSchema),
  instructions: opt(z.string().check(z.maxLength(256_000))),
  tools: opt(toolsSchema),
  metadata: opt(metadataSchema),
  temperature: opt(temperatureSchema),
  top_p: opt(topPSchema),
  stream: opt(z.boolean()),
  max_prompt_tokens: opt(tokenLimitSchema),
  max_completion_tokens: opt(tokenLimitSchema),
  truncation_strategy: opt(truncationSchema),
  tool_choice: opt(toolChoiceSchema),
  parallel_tool_calls: opt(z.boolean()),
  response_format: opt(responseFormatSchema),
};

export const createRunSchema = z.strictObject({
  ...runFields,
  additional_instructions: opt(z.string().check(z.maxLength(256_000))),
  additional_messages: opt(initialMessagesSchema),
});

export const threadInputSchema = z.strictObject({
  messages: opt(initialMessagesSchema),
  metadata: opt(metadataSchema),
  tool_resources: opt(toolResourcesSchema),
});

export const createThreadAndRunSchema = z.strictObject({
  ...runFields,
  thread: opt(threadInputSchema),
  tool_resources: opt(toolResourcesSchema),
});

type RunBody = z.infer<typeof createThreadAndRunSchema> & { additional_instructions?: string | null };

/** A forced tool must be one of the run's tools; `required` needs at least one tool. */
export function checkToolChoice(choice: ToolChoice, tools: Tool[]): void {
  if (choice === 'required' && tools.length === 0) {
    throw badRequest('Invalid `tool_choice`: `required` needs at least one tool in `tools` (or on the assistant).', 'tool_choice', 'invalid_value');
  }
  if (typeof choice === 'object' && !tools.some((t) => t.function.name === choice.function.name)) {
    throw badRequest(
      `Invalid \`tool_choice.function.name\`: no function tool named '${choice.function.name}' in the run's tools.`,
      'tool_choice.function.name',
      'invalid_value',
    );
  }
}

function joinInstructions(base: string | null, extra: string | null | undefined): string {
  if (!extra) return base ?? '';
  return base ? `${base}\n\n${extra}` : extra;
}

/**
 * Overrides on top of the assistant, then the defaults of docs/api.md. The managed provider
 * is the request's (header) or else the assistant's binding, and must exist.
 */
export async function buildRunSpec(workspaceId: string, body: RunBody, assistant: Assistant, headerProvider: string | undefined): Promise<RunSpec> {
  const provider = await requireManagedProvider(workspaceId, headerProvider ?? providerSlugOf(assistant), 'x-gateway-provider');
  const tools = body.tools ?? assistant.tools;
  const toolChoice = body.tool_choice ?? 'auto';
  checkToolChoice(toolChoice, tools);
  return {
    assistant_id: assistant.id,
    model: body.model ?? assistant.model,
    instructions: joinInstructions(body.instructions ?? assistant.instructions, body.additional_instructions),
    tools,
    metadata: body.metadata ?? {},
    temperature: body.temperature ?? assistant.temperature ?? 1,
    top_p: body.top_p ?? assistant.top_p ?? 1,
    max_prompt_tokens: body.max_prompt_tokens ?? null,
    max_completion_tokens: body.max_completion_tokens ?? null,
    truncation_strategy: body.truncation_strategy
      ? { type: body.truncation_strategy.type, last_messages: body.truncation_strategy.last_messages ?? null }
      : { type: 'auto', last_messages: null },
    tool_choice: toolChoice,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    response_format: body.response_format ?? assistant.response_format ?? 'auto',
    provider,
  };
}
