import { runStep } from '../fine-tuning/steps';
import type { FineTuneStepResult } from '../fine-tuning/workflow';
import { parseEvent } from '../shared/workflows/events';
import { fineTuneStepEvent } from './events';

/**
 * Task worker of the fine-tuning state machine (infra/workflows/fine-tuning.ts): the event
 * is the task's Parameters `{action, workspaceId, jobId}`, the result `{next, waitSeconds}`.
 * Invoked by the state machine only; it never references the machine itself. Any other
 * event fails the task with MalformedEventError.
 */
export async function handler(event: unknown): Promise<FineTuneStepResult> {
  return runStep(parseEvent(fineTuneStepEvent, event, 'fine-tune-step'));
}
