import { runStep } from '../assistants/run-steps';
import { RUN_STEP_ACTIONS, type RunStepEvent, type RunStepResult } from '../assistants/run-workflow';

/**
 * Task worker of the runs state machine (infra/workflows/runs.ts): the event is the task's
 * Parameters `{action, workspaceId, threadId, runId}` (+ `taskToken`, `timeoutSeconds` for
 * `wait`; `error` for `fail`), the result `{next, status}`. Invoked by the state machine
 * only; it never starts, stops or answers the machine itself (a CDK dependency cycle).
 */
export async function handler(event: RunStepEvent): Promise<RunStepResult | { stored: true }> {
  const ok = (v: unknown) => typeof v === 'string' && v.length > 0;
  if (!RUN_STEP_ACTIONS.includes(event?.action) || !ok(event.workspaceId) || !ok(event.threadId) || !ok(event.runId)) {
    throw new TypeError(`run-step: unexpected event ${JSON.stringify({ ...event, taskToken: undefined }).slice(0, 200)}`);
  }
  return runStep(event);
}
