import { getItem, updateItem } from '../../shared/db/ops';
import { log } from '../../shared/telemetry/logger';
import { runKey } from '../store/db';
import { cancelRunNow, closeOpenSteps, runModelStepByRef, startRunNow } from '../engine/model-step';
import type { LastError } from '../engine/call';
import { expireIfDue } from '../engine/expiry';
import { loadRunState } from '../engine/state';
import { RUN_NOT_WAITING, RUN_STEP_NOT_COMMITTED, type RunStepEvent, type RunStepResult } from './contract';
import { transitionRun, type RunRef, type TransitionGuard } from '../store/runs';
import { isTerminal, nowSeconds, type RunStatus } from '../types';

/**
 * The workflow side of a non-streamed run: one function per task of the runs
 * state machine (infra/workflows/runs.ts), called by the `run-step` worker, and the
 * finalizer of executions that end without succeeding. Every action is re-entrant (a retry,
 * a redelivery, an execution re-run after a local restart): it reads the run, acts with a
 * conditional write, and answers where the machine goes next from the run's status.
 *
 * Runs a streaming request executes inline (`engine_inline`) are never touched here: they
 * are not expired, failed or resumed by the workflow, even if an execution of theirs is
 * still around (a non-streamed run whose outputs were then submitted with `stream: true`).
 *
 * Internal attributes of the run item written here (see engine/state.ts for the others):
 * - `engine_task_token`  the token of the WaitForToolOutputs task waiting for this run
 * - `engine_task_calls`  `engine_calls` when it was stored (which wait it belongs to)
 */

/** Guard term: the run is not executed inline by a streaming request. */
const NOT_INLINE: TransitionGuard = {
  condition: 'attribute_not_exists(#engine_inline) OR #engine_inline <> :engine_inline_true',
  values: { ':engine_inline_true': true },
};

const INTERNAL_FAILURE: LastError = { code: 'server_error', message: 'The run stopped on an internal error before it finished.' };

function named(name: string, message: string): Error {
  const err = new Error(message);
  err.name = name;
  return err;
}

const nextOf = (status: RunStatus): RunStepResult['next'] => (status === 'in_progress' ? 'model' : status === 'requires_action' ? 'wait' : 'done');

/**
 * Where the machine goes from the run as it stands. A run being cancelled is finished here
 * (cancelling -> cancelled, thread released): whoever cancelled it may have found no
 * execution to stop yet. A run gone or taken over by a streaming request: `done`.
 */
export async function report(ref: RunRef): Promise<RunStepResult> {
  const loaded = await loadRunState(ref);
  if (!loaded) return { next: 'done', status: 'missing' };
  if (loaded.state.inline) return { next: 'done', status: loaded.record.run.status };
  let status = loaded.record.run.status;
  if (status === 'cancelling') status = (await cancelRunNow(loaded.record))?.run.status ?? (await loadRunState(ref))?.record.run.status ?? status;
  return { next: nextOf(status), status };
}

/**
 * MarkInProgress: queued -> in_progress (started_at), or expired when it waited in the
 * queue past its `expires_at` (e.g. across a restart); any other state is reported as is.
 */
async function start(ref: RunRef): Promise<RunStepResult> {
  const loaded = await loadRunState(ref);
  if (loaded && !loaded.state.inline && loaded.record.run.status === 'queued') {
    const current = await expireIfDue(loaded.record, loaded.state);
    if (current.run.status === 'queued') await startRunNow(current);
  }
  return report(ref);
}

/**
 * ModelStep: one model call (engine/model-step.ts: safe to repeat, commits at most once). A step that
 * leaves the run in_progress without committing is an error, so the machine retries it
 * rather than looping.
 */
async function model(ref: RunRef): Promise<RunStepResult> {
  const loaded = await loadRunState(ref);
  if (!loaded || loaded.state.inline) return report(ref);
  const outcome = await runModelStepByRef(ref);
  if (!outcome.executed && outcome.run.status === 'in_progress') {
    throw named(RUN_STEP_NOT_COMMITTED, `run ${ref.runId}: the model step did not commit`);
  }
  return report(ref);
}

/**
 * WaitForToolOutputs (a `.waitForTaskToken` task): store the task's token on the run, and
 * set `expires_at` to when the task times out, if (and only if) the run still waits for
 * the outputs of the same call. Otherwise RunNotWaiting: outputs arrived before the token
 * was stored (the run is in_progress again), or the run was cancelled or taken over.
 * The task then completes when the API calls SendTaskSuccess with the token (lifecycle.ts).
 */
async function wait(ref: RunRef, token: string, timeoutSeconds: number): Promise<{ stored: true }> {
  const loaded = await loadRunState(ref);
  const status = loaded?.record.run.status ?? 'missing';
  if (!loaded || loaded.state.inline || status !== 'requires_action') {
    throw named(RUN_NOT_WAITING, `run ${ref.runId} is not waiting for tool outputs (${loaded?.state.inline ? 'streamed' : status})`);
  }
  const stored = await updateItem('threads', runKey(ref.workspaceId, ref.threadId, ref.runId), {
    set: { engine_task_token: token, engine_task_calls: loaded.state.calls, expires_at: nowSeconds() + timeoutSeconds },
    condition: `attribute_exists(pk) AND #status = :waiting AND #engine_calls = :calls AND (${NOT_INLINE.condition})`,
    conditionValues: { ':waiting': 'requires_action', ':calls': loaded.state.calls, ...NOT_INLINE.values },
  });
  if (!stored) throw named(RUN_NOT_WAITING, `run ${ref.runId} stopped waiting for tool outputs`);
  return { stored: true };
}

/**
 * MarkExpired (the wait timed out): requires_action -> expired, its waiting tool step
 * expired. A run that is no longer waiting is reported as is: outputs submitted just as
 * the wait timed out resumed it (in_progress: the machine continues with ModelStep).
 */
async function expire(ref: RunRef): Promise<RunStepResult> {
  const loaded = await loadRunState(ref);
  if (!loaded || loaded.state.inline) return report(ref);
  const expired = await transitionRun(ref, ['requires_action'], { status: 'expired', usage: loaded.state.usage }, NOT_INLINE);
  if (expired) {
    await closeOpenSteps(expired, 'expired', 'run_expired');
    log.info('run expired waiting for tool outputs', { run_id: ref.runId });
  }
  return report(ref);
}

/** Fail a run that is still active (not a streamed one): last_error, open steps failed; a cancelling one is cancelled. */
export async function failActive(ref: RunRef, lastError: LastError): Promise<boolean> {
  const loaded = await loadRunState(ref);
  if (!loaded || loaded.state.inline || isTerminal(loaded.record.run.status)) return false;
  if (loaded.record.run.status === 'cancelling') {
    await cancelRunNow(loaded.record);
    return false;
  }
  const failed = await transitionRun(
    ref,
    ['queued', 'in_progress', 'requires_action'],
    { status: 'failed', last_error: lastError, usage: loaded.state.usage },
    NOT_INLINE,
  );
  if (failed) await closeOpenSteps(failed, 'failed', 'run_failed');
  return failed !== undefined;
}

/** MarkFailed: a task failed after its retries. */
async function fail(ref: RunRef, error: RunStepEvent['error']): Promise<RunStepResult> {
  const failed = await failActive(ref, INTERNAL_FAILURE);
  log.error('run workflow task failed after its retries', { run_id: ref.runId, failed_run: failed, error: error?.Error, cause: error?.Cause?.slice(0, 500) });
  return report(ref);
}

export async function runStep(event: RunStepEvent): Promise<RunStepResult | { stored: true }> {
  const ref: RunRef = { workspaceId: event.workspaceId, threadId: event.threadId, runId: event.runId };
  switch (event.action) {
    case 'start':
      return start(ref);
    case 'model':
      return model(ref);
    case 'wait':
      if (typeof event.taskToken !== 'string' || !event.taskToken || !Number.isInteger(event.timeoutSeconds) || event.timeoutSeconds! < 1) {
        throw new TypeError('run-step wait: taskToken and timeoutSeconds are required');
      }
      return wait(ref, event.taskToken, event.timeoutSeconds!);
    case 'expire':
      return expire(ref);
    case 'fail':
      return fail(ref, event.error);
  }
}

/**
 * The finalizer (EventBridge: an execution ended FAILED, TIMED_OUT or ABORTED): a run being
 * cancelled becomes `cancelled` (StopExecution is how the API cancels); any other run still
 * active when its execution died is failed, so no run holds its thread forever.
 */
export async function finalizeRunExecution(ref: RunRef, executionStatus: string, cause?: string | null): Promise<void> {
  const failed = await failActive(ref, {
    code: 'server_error',
    message: `The run's workflow ended (${executionStatus.toLowerCase()}) before the run finished.`,
  });
  if (failed) log.warn('run failed: its execution ended without finishing it', { run_id: ref.runId, status: executionStatus, cause: cause?.slice(0, 300) });
}

/**
 * For the API (lifecycle.ts), after tool outputs resumed the run from the wait of
 * `engine_calls = calls`: take that wait's task token, exactly once (a conditional remove),
 * so the caller can answer the waiting task. Undefined when no token was stored for that
 * wait (the task has not stored it yet and will find the run resumed) or another caller
 * took it.
 */
export async function takeTaskToken(ref: RunRef, calls: number): Promise<string | undefined> {
  const key = runKey(ref.workspaceId, ref.threadId, ref.runId);
  const item = await getItem<Record<string, unknown>>('threads', key, true);
  const token = item?.engine_task_token;
  if (typeof token !== 'string' || item?.engine_task_calls !== calls) return undefined;
  const taken = await updateItem('threads', key, {
    remove: ['engine_task_token', 'engine_task_calls'],
    condition: '#engine_task_token = :token',
    conditionValues: { ':token': token },
  });
  return taken ? token : undefined;
}
