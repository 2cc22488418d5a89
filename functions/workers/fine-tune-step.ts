import { runStep } from '../fine-tuning/steps';
import { FINE_TUNE_ACTIONS, type FineTuneStepEvent, type FineTuneStepResult } from '../fine-tuning/workflow';

/**
 * Task worker of the fine-tuning state machine (infra/workflows/fine-tuning.ts): the event
 * is the task's Parameters `{action, workspaceId, jobId}`, the result `{next, waitSeconds}`.
 * Invoked by the state machine only; it never references the machine itself.
 */
export async function handler(event: FineTuneStepEvent): Promise<FineTuneStepResult> {
  if (!FINE_TUNE_ACTIONS.includes(event?.action) || typeof event.workspaceId !== 'string' || typeof event.jobId !== 'string') {
    throw new TypeError(`fine-tune-step: unexpected event ${JSON.stringify(event).slice(0, 200)}`);
  }
  return runStep(event);
}
