/**
 * The fine-tuning job lifecycle (issue «Fine-tuning jobs» item 2, infra/workflows/README.md).
 *
 *   Validate ──> Submit ──> WaitForProgress <──> Poll ──> Done
 *      │            │                              │  └──> Continue ──> Continued
 *      └────────────┴──────────> Done <────────────┘   (job terminal: failed, cancelled, succeeded)
 *   any task error after its retries ──> MarkFailed ──> Failed
 *
 * Continue: a standard execution fails at 25,000 history events, about 2,700 polls (some
 * 46 hours at one a minute), while providers may train for days. Each Poll passes its
 * count along (`$.step.polls`); after FINE_TUNING_POLLS_PER_EXECUTION the step answers
 * `continue`, and the Continue task queues the job's next execution (named
 * `<jobId>--<n>`, started by the start consumer), and this one succeeds. The job's state
 * is all in DynamoDB, so the next execution's Validate finds it submitted and polls on.
 *
 * The job's status lives in DynamoDB (jobs table); every task is one action of the
 * `fine-tune-step` worker (functions/workers/fine-tune-step.ts), which reads the job, acts,
 * writes the transition conditionally and answers `{next, waitSeconds}`. Cancel is a flag
 * the next task acts on (provider cancel), so no state here knows about cancellation.
 */
import { PROVIDER_UNAVAILABLE, type FineTuneAction } from '../../functions/fine-tuning/workflow';
import { choiceOn, fail, lambdaTask, succeed, waitSeconds, type JsonObject, type Retrier, type StateMachineDefinition } from './asl';

export const FINE_TUNE_STEP_WORKER = 'fine-tune-step';
export const FINE_TUNE_START_WORKER = 'fine-tune-start';
export const FINE_TUNE_FINALIZE_WORKER = 'fine-tune-finalize';

/** Fine-tuning runs for days; 21 days also stays below Node's timer limit for the local runner. */
export const FINE_TUNING_TIMEOUT_SECONDS = 21 * 24 * 3600;

const PROVIDER_RETRY: Retrier = {
  ErrorEquals: [PROVIDER_UNAVAILABLE],
  IntervalSeconds: 10,
  MaxAttempts: 6,
  BackoffRate: 2,
  MaxDelaySeconds: 300,
  JitterStrategy: 'FULL',
};

const jobRef = (action: FineTuneAction): JsonObject => ({ action, 'workspaceId.$': '$.workspaceId', 'jobId.$': '$.jobId' });

const step = (action: FineTuneAction, next: string, extra: JsonObject = {}) =>
  lambdaTask({
    worker: FINE_TUNE_STEP_WORKER,
    parameters: { ...jobRef(action), ...extra },
    // A provider call or two plus a few DynamoDB writes; generous for slow provider APIs.
    timeoutSeconds: 180,
    resultPath: '$.step',
    retry: [PROVIDER_RETRY],
    catch: [{ ErrorEquals: ['States.ALL'], Next: 'MarkFailed', ResultPath: '$.error' }],
    next,
  });

export function fineTuningDefinition(): StateMachineDefinition {
  return {
    Comment: 'AI gateway fine-tuning job: validate files, submit to the provider, mirror its progress until a terminal state.',
    StartAt: 'Validate',
    TimeoutSeconds: FINE_TUNING_TIMEOUT_SECONDS,
    States: {
      Validate: step('validate', 'AfterValidate'),
      AfterValidate: choiceOn('$.step.next', { submit: 'Submit', wait: 'WaitForProgress' }, 'Done'),
      Submit: step('submit', 'AfterSubmit'),
      AfterSubmit: choiceOn('$.step.next', { wait: 'WaitForProgress' }, 'Done'),
      WaitForProgress: waitSeconds({ secondsPath: '$.step.waitSeconds', next: 'Poll' }),
      // The previous step's result rides along: its `polls` (absent after Validate/Submit = 0).
      Poll: step('poll', 'AfterPoll', { 'step.$': '$.step' }),
      AfterPoll: choiceOn('$.step.next', { wait: 'WaitForProgress', continue: 'Continue' }, 'Done'),
      Continue: step('continue', 'Continued', { 'execution.$': '$$.Execution.Name' }),
      Continued: succeed('The job continues in a new execution (history limit).'),
      MarkFailed: lambdaTask({
        worker: FINE_TUNE_STEP_WORKER,
        parameters: { ...jobRef('fail'), 'error.$': '$.error' },
        timeoutSeconds: 60,
        resultPath: null,
        next: 'Failed',
      }),
      Failed: fail('FineTuningWorkflowError', 'A task of the workflow failed after its retries; the job was marked failed.'),
      Done: succeed('The job is in a terminal state.'),
    },
  };
}
