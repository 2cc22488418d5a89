import type { ZodMiniType } from 'zod/mini';
import type { FineTuneStepEvent, FineTuningExecutionInput, StartJobMessage } from '../fine-tuning/workflow';
import { FINE_TUNE_ACTIONS } from '../fine-tuning/workflow';
import type { RunExecutionInput, RunStepEvent } from '../assistants/workflow/contract';
import { RUN_STEP_ACTIONS } from '../assistants/workflow/contract';
import { z } from '../shared/validation';

/**
 * The shapes of what the workers receive: Step Functions task Parameters, queue messages
 * and the EventBridge execution status changes. Each is typed by its contract in
 * assistants/workflow/contract.ts / fine-tuning/workflow.ts (kept free of runtime imports
 * for the CDK app), so a schema that drifted from its contract is a type error here.
 */
const id = z.string().check(z.minLength(1));
const caughtError = z.optional(z.looseObject({ Error: z.optional(z.string()), Cause: z.optional(z.string()) }));

const runReferenceShape = { workspaceId: id, threadId: id, runId: id };

export const runExecutionInput: ZodMiniType<RunExecutionInput> = z.looseObject(runReferenceShape);

export const runStepEvent: ZodMiniType<RunStepEvent> = z.looseObject({
  ...runReferenceShape,
  action: z.enum(RUN_STEP_ACTIONS),
  taskToken: z.optional(z.string()),
  timeoutSeconds: z.optional(z.number()),
  error: caughtError,
});

const jobReferenceShape = { workspaceId: z.string(), jobId: z.string() };

export const fineTuningExecutionInput: ZodMiniType<FineTuningExecutionInput> = z.looseObject(jobReferenceShape);
export const startJobMessage: ZodMiniType<StartJobMessage> = z.looseObject({ ...jobReferenceShape, execution: z.optional(z.string()) });

export const fineTuneStepEvent: ZodMiniType<FineTuneStepEvent> = z.looseObject({
  ...jobReferenceShape,
  action: z.enum(FINE_TUNE_ACTIONS),
  error: caughtError,
  step: z.optional(z.looseObject({ polls: z.optional(z.number()) })),
  execution: z.optional(z.string()),
});

/** EventBridge "Step Functions Execution Status Change": the fields the finalizers read. */
export const executionStatusChange = z.looseObject({
  detail: z.looseObject({
    executionArn: z.string(),
    status: z.string(),
    input: z.nullable(z.optional(z.string())),
    cause: z.nullable(z.optional(z.string())),
  }),
});

/** An execution's input (a JSON string) as `schema` types it, or undefined when it is not that. */
export function executionInput<T>(schema: ZodMiniType<T>, input: string | null | undefined): T | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(input ?? '{}');
  } catch {
    return undefined;
  }
  const result = schema.safeParse(parsed);
  return result.success ? result.data : undefined;
}
