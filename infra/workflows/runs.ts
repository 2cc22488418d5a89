/**
 * The non-streamed assistant run lifecycle (issue «Assistants» items 3 and 5,
 * infra/workflows/README.md). Started by the `run-start` queue consumer, one execution per run
 * (execution name = run id), input `{workspaceId, threadId, runId}`.
 *
 *   MarkInProgress ──> ModelStep ──> WaitForToolOutputs ──(SendTaskSuccess)──> ModelStep ...
 *        │                │                 │
 *        │                │                 ├─ States.Timeout ──> MarkExpired ──> Done (or ModelStep
 *        │                │                 │                       if outputs beat the timeout)
 *        │                │                 └─ RunNotWaiting ──> MarkInProgress (re-read the run)
 *        └────────────────┴──> Done   (completed | incomplete | failed | cancelled | expired)
 *   any task error after its retries ──> MarkFailed (last_error server_error) ──> Failed
 *
 * The run's status lives in DynamoDB; every task is one action of the `run-step` worker
 * (functions/assistants/workflow/steps.ts), which reads the run, acts with a conditional write
 * and answers `{next, status}`: in_progress -> `model`, requires_action -> `wait`, anything
 * else -> `done` (a run being cancelled is finished as `cancelled` on the way). ModelStep is
 * one model call (engine/model-step.ts: a retried call writes nothing twice and commits at most once),
 * so it is retried on any error. WaitForToolOutputs stores its task token on the run; the
 * API's submit_tool_outputs answers it (functions/assistants/workflow/lifecycle.ts). Cancel is a hard
 * stop (StopExecution) whose finalizer (`run-finalize`) marks the run cancelled; the same
 * finalizer fails a run whose execution died. The `run-reconcile` worker (every minute)
 * ends what no executor holds any more (workflow/recovery.ts): runs whose execution is not
 * running though they left `queued`, streamed runs whose request died, runs past `expires_at`.
 */
import {
  RUN_FINALIZE_WORKER,
  RUN_NOT_WAITING,
  RUN_RECONCILE_WORKER,
  RUN_START_WORKER,
  RUN_STEP_WORKER,
  type RunStepAction,
} from '../../functions/assistants/workflow/contract';
import { parseConfig } from '../../functions/shared/config';
import { choiceOn, fail, lambdaTask, lambdaWaitForTokenTask, succeed, type Catcher, type JsonObject, type Retrier, type StateMachineDefinition } from './asl';

export { RUN_FINALIZE_WORKER, RUN_RECONCILE_WORKER, RUN_START_WORKER, RUN_STEP_WORKER };

/** A run's whole life: many tool-output waits and model calls, far below a day in practice. */
export const RUNS_TIMEOUT_SECONDS = 24 * 3600;

/** A model call through the gateway (DEFAULT_UPSTREAM_TIMEOUT_MS 600 s) plus its writes: the Lambda maximum. */
export const MODEL_STEP_TIMEOUT_SECONDS = 900;

/** Any error of a task (a DynamoDB hiccup, a crashed or timed-out worker): the actions are re-entrant. */
const TASK_RETRY: Retrier = {
  ErrorEquals: ['States.ALL'],
  IntervalSeconds: 2,
  MaxAttempts: 3,
  BackoffRate: 2,
  MaxDelaySeconds: 30,
  JitterStrategy: 'FULL',
};

const TO_MARK_FAILED: Catcher = { ErrorEquals: ['States.ALL'], Next: 'MarkFailed', ResultPath: '$.error' };

const runRef = (action: RunStepAction): JsonObject => ({
  action,
  'workspaceId.$': '$.workspaceId',
  'threadId.$': '$.threadId',
  'runId.$': '$.runId',
});

const afterStep = (comment: string) => choiceOn('$.step.next', { model: 'ModelStep', wait: 'WaitForToolOutputs' }, 'Done', comment);

/**
 * The definition. The tool-output wait's timeout is RUN_TOOL_OUTPUT_TIMEOUT_SECONDS
 * (functions/shared/config.ts, default 600) as set where the definition is built; the wait
 * task passes the same number to its worker, which sets the run's `expires_at` from it, so
 * the run's advertised expiry and the task's timeout never disagree.
 */
export function runsDefinition(): StateMachineDefinition {
  const waitSeconds = parseConfig(process.env).runToolOutputTimeoutSeconds;
  return {
    Comment: 'AI gateway assistant run (non-streamed): model steps, tool-output waits, until a terminal state.',
    StartAt: 'MarkInProgress',
    TimeoutSeconds: RUNS_TIMEOUT_SECONDS,
    States: {
      MarkInProgress: lambdaTask({
        worker: RUN_STEP_WORKER,
        parameters: runRef('start'),
        timeoutSeconds: 60,
        resultPath: '$.step',
        retry: [TASK_RETRY],
        catch: [TO_MARK_FAILED],
        next: 'AfterStart',
        comment: 'queued -> in_progress; reports where the run stands (also after a restart or a missed wait)',
      }),
      AfterStart: afterStep('in_progress -> ModelStep, requires_action -> WaitForToolOutputs, else Done'),
      ModelStep: lambdaTask({
        worker: RUN_STEP_WORKER,
        parameters: runRef('model'),
        timeoutSeconds: MODEL_STEP_TIMEOUT_SECONDS,
        resultPath: '$.step',
        retry: [TASK_RETRY],
        catch: [TO_MARK_FAILED],
        next: 'AfterModelStep',
        comment: 'one model call: requires_action (tool calls) | completed | incomplete | failed (provider error, last_error)',
      }),
      AfterModelStep: afterStep('requires_action -> WaitForToolOutputs, terminal -> Done'),
      WaitForToolOutputs: lambdaWaitForTokenTask({
        worker: RUN_STEP_WORKER,
        parameters: { ...runRef('wait'), timeoutSeconds: waitSeconds },
        timeoutSeconds: waitSeconds,
        resultPath: null,
        catch: [
          { ErrorEquals: ['States.Timeout'], Next: 'MarkExpired', ResultPath: '$.error' },
          { ErrorEquals: [RUN_NOT_WAITING], Next: 'MarkInProgress', ResultPath: '$.error' },
          TO_MARK_FAILED,
        ],
        next: 'ModelStep',
        comment: 'stores the task token on the run; submit_tool_outputs answers it (SendTaskSuccess)',
      }),
      MarkExpired: lambdaTask({
        worker: RUN_STEP_WORKER,
        parameters: runRef('expire'),
        timeoutSeconds: 60,
        resultPath: '$.step',
        retry: [TASK_RETRY],
        catch: [TO_MARK_FAILED],
        next: 'AfterExpire',
        comment: 'requires_action -> expired (never a streamed run)',
      }),
      AfterExpire: afterStep('expired -> Done; resumed just in time -> ModelStep'),
      MarkFailed: lambdaTask({
        worker: RUN_STEP_WORKER,
        parameters: { ...runRef('fail'), 'error.$': '$.error' },
        timeoutSeconds: 60,
        resultPath: null,
        retry: [TASK_RETRY],
        next: 'Failed',
        comment: 'an active run -> failed with last_error server_error',
      }),
      Failed: fail('RunWorkflowError', 'A task of the workflow failed after its retries; the run was marked failed.'),
      Done: succeed("The run is in a terminal state (or no longer the workflow's to execute)."),
    },
  };
}
