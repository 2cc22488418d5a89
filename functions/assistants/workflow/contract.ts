/**
 * The contract between the runs state machine (infra/workflows/runs.ts), its Lambda workers
 * (functions/workers/run-*.ts) and the API hooks (lifecycle.ts). Kept here, below all of
 * them and free of runtime imports, so the definition and the code that answers it cannot
 * drift apart (the CDK app imports it at synth).
 */

export const RUN_STEP_WORKER = 'run-step';
export const RUN_START_WORKER = 'run-start';
export const RUN_FINALIZE_WORKER = 'run-finalize';
/** The run reconciler (workflow/recovery.ts), on a schedule. */
export const RUN_RECONCILE_WORKER = 'run-reconcile';

/**
 * Execution input and queue message: the run's reference. The API sends it to the FIFO
 * queue (group = thread, dedup = run), the consumer starts the execution named after the
 * run with exactly this input, every task receives these three fields.
 */
export interface RunExecutionInput {
  workspaceId: string;
  threadId: string;
  runId: string;
}

export const RUN_STEP_ACTIONS = ['start', 'model', 'wait', 'expire', 'fail'] as const;
export type RunStepAction = (typeof RUN_STEP_ACTIONS)[number];

/** Event of the `run-step` task worker. */
export interface RunStepEvent extends RunExecutionInput {
  action: RunStepAction;
  /** `wait` only: the task token of WaitForToolOutputs (`$$.Task.Token`). */
  taskToken?: string;
  /** `wait` only: the task's TimeoutSeconds, so `expires_at` says when the wait ends. */
  timeoutSeconds?: number;
  /** `fail` only: the caught task error (`{Error, Cause}` as Step Functions gives it). */
  error?: { Error?: string; Cause?: string };
}

/**
 * What the plain actions answer; the Choice states branch on `next`, derived from the
 * run's status: in_progress -> `model`, requires_action -> `wait`, anything else (terminal,
 * cancelling, or a run a streaming request has taken over) -> `done`.
 */
export interface RunStepResult {
  next: 'model' | 'wait' | 'done';
  /** The run's status after the action (for the execution history). */
  status: string;
}

/** What the API sends with SendTaskSuccess when tool outputs resumed the run. */
export interface ToolOutputsSubmitted {
  resumed: true;
}

/**
 * Error of the `wait` action when the run no longer waits (outputs arrived before the token
 * was stored, a cancel, a streaming takeover): the machine re-reads the run (MarkInProgress).
 */
export const RUN_NOT_WAITING = 'RunNotWaiting';

/** Error of the `model` action when a step left the run in_progress without committing: retried. */
export const RUN_STEP_NOT_COMMITTED = 'RunStepNotCommitted';
