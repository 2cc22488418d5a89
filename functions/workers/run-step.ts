import { runStep } from '../assistants/workflow/steps';
import type { RunStepResult } from '../assistants/workflow/contract';
import { parseEvent } from '../shared/workflows/events';
import { runStepEvent } from './events';

/**
 * Task worker of the runs state machine (infra/workflows/runs.ts): the event is the task's
 * Parameters `{action, workspaceId, threadId, runId}` (+ `taskToken`, `timeoutSeconds` for
 * `wait`; `error` for `fail`), the result `{next, status}`. Invoked by the state machine
 * only; it never starts, stops or answers the machine itself (a CDK dependency cycle).
 * Any other event fails the task with MalformedEventError.
 */
export async function handler(event: unknown): Promise<RunStepResult | { stored: true }> {
  return runStep(parseEvent(runStepEvent, event, 'run-step'));
}
