import { config } from '../../shared/config';
import { log } from '../../shared/telemetry/logger';
import { executionArn, executionStatus } from '../../shared/workflows/sfn';
import type { LastError } from '../engine/call';
import { closeOpenSteps } from '../engine/model-step';
import { expireIfDue, isPastExpiry } from '../engine/expiry';
import { loadRunState, type EngineState } from '../engine/state';
import { ACTIVE_RUN_SHARDS, listActiveRuns, transitionRun, type RunRecord, type RunRef, type TransitionGuard } from '../store/runs';
import { isTerminal } from '../types';
import { failActive } from './steps';

/**
 * The run reconciler: a run that is active but that nothing executes any more reaches a
 * terminal state, and its thread is released. Whoever executes a run (a workflow execution,
 * or the streaming request running it inline) normally ends it; this covers the executors
 * that died (a `kill -9` of the local runtime, a Lambda container lost mid-stream, an
 * execution whose end event was lost):
 *
 * - past `expires_at`: `expired` (`cancelled` if it was being cancelled), whoever holds it;
 * - executed inline (streamed) and its executor's lease lapsed (`executor_lease_until`,
 *   renewed every second while it calls the model): `failed` (`last_error` server_error),
 *   or `cancelled` if it was being cancelled. A streamed run waiting for tool outputs has
 *   no executor by design: only its expiry ends it;
 * - executed by the workflow, and its execution is not running (ended, or never existed
 *   although the run left `queued`): `failed`, or `cancelled` if it was being cancelled.
 *   A `queued` run waits for its queue message (durable in AWS and locally) until it expires.
 *
 * Every ending is one conditional transition on what was checked (status, lease, expiry),
 * so a live executor that renews its lease or commits first wins, and a run is never ended
 * twice. `reconcileRuns` walks the active-runs index (store/runs.ts): the `run-reconcile`
 * worker runs it every minute in AWS, the local runtime every
 * GATEWAY_RUN_RECONCILE_INTERVAL_MS and once at start-up.
 */

/** `running`: an execution of the run is RUNNING; `ended`: it exists and has stopped; `missing`: none. */
export type ExecutionState = 'running' | 'ended' | 'missing';

/** What the reconciler found: an executor still holds the run, or how it ended the run now. */
export type Recovery = 'live' | 'gone' | 'expired' | 'failed' | 'cancelled';

export const EXECUTOR_LOST: LastError = {
  code: 'server_error',
  message: 'The run stopped before it finished: the process executing it ended (it was not cancelled). Create a new run to try again.',
};

/** The run's workflow execution, from Step Functions; unknown (never acted on) without a machine. */
export async function workflowExecutionState(runId: string): Promise<ExecutionState | undefined> {
  const machine = config().runStateMachineArn;
  if (!machine) return undefined;
  const status = await executionStatus(executionArn(machine, runId));
  return status === undefined ? 'missing' : status === 'RUNNING' ? 'running' : 'ended';
}

/** Whether the request executing an inline run has let its lease lapse (a run never leased: no). */
export const inlineLeaseLapsed = (state: EngineState, nowMs = Date.now()) => state.leaseUntil !== null && state.leaseUntil < nowMs;

/** An inline run whose executor is gone: failed (cancelled if being cancelled), if the lease is still lapsed. */
async function endLostInline(record: RunRecord, state: EngineState, nowMs: number): Promise<Recovery> {
  const guard: TransitionGuard = {
    condition: '#engine_inline = :lost_inline AND #executor_lease_until < :lease_now',
    values: { ':lost_inline': true, ':lease_now': nowMs },
  };
  const ref = refOf(record);
  if (record.run.status === 'cancelling') {
    const done = await transitionRun(ref, ['cancelling'], { status: 'cancelled', usage: state.usage }, guard);
    if (!done) return 'live';
    await closeOpenSteps(done, 'cancelled', 'run_cancelled');
    return 'cancelled';
  }
  const done = await transitionRun(ref, ['queued', 'in_progress'], { status: 'failed', last_error: EXECUTOR_LOST, usage: state.usage }, guard);
  if (!done) return 'live';
  await closeOpenSteps(done, 'failed', 'run_failed');
  return 'failed';
}

/**
 * Cancel an inline run at once when its executor is gone (a live one finishes the cancel
 * itself within a second). True when the run is now cancelled.
 */
export async function cancelIfExecutorLost(ref: RunRef): Promise<boolean> {
  const loaded = await loadRunState(ref);
  if (!loaded?.state.inline || loaded.record.run.status !== 'cancelling' || !inlineLeaseLapsed(loaded.state)) return false;
  return (await endLostInline(loaded.record, loaded.state, Date.now())) === 'cancelled';
}

/**
 * Check one run and end it if nothing executes it any more (see the module comment).
 * `executionState` answers for workflow runs (default: Step Functions); undefined = unknown,
 * and an unknown state ends nothing.
 */
export async function recoverRun(
  ref: RunRef,
  executionState: (runId: string) => Promise<ExecutionState | undefined> = workflowExecutionState,
): Promise<Recovery> {
  const loaded = await loadRunState(ref);
  if (!loaded || isTerminal(loaded.record.run.status)) return 'gone';
  const { record, state } = loaded;
  if (isPastExpiry(record)) {
    const after = await expireIfDue(record, state);
    return isTerminal(after.run.status) ? (after.run.status === 'cancelled' ? 'cancelled' : 'expired') : 'live';
  }
  const status = record.run.status;
  if (state.inline) {
    if (status === 'requires_action') return 'live';
    const now = Date.now();
    return inlineLeaseLapsed(state, now) ? endLostInline(record, state, now) : 'live';
  }
  if (status === 'queued') return 'live';
  const execution = await executionState(ref.runId);
  if (execution !== 'ended' && execution !== 'missing') return 'live';
  const wasCancelling = status === 'cancelling';
  const failed = await failActive(ref, {
    code: 'server_error',
    message:
      execution === 'missing'
        ? 'The run stopped before it finished: it has no workflow execution. Create a new run to try again.'
        : 'The run stopped before it finished: its workflow execution ended. Create a new run to try again.',
  });
  const after = await loadRunState(ref);
  if (!after || !isTerminal(after.record.run.status)) return 'live';
  if (failed) log.warn('run failed: its workflow execution is not running', { run_id: ref.runId, execution });
  return wasCancelling && after.record.run.status === 'cancelled' ? 'cancelled' : failed ? 'failed' : 'gone';
}

/**
 * For a request that a run's claim on its thread would refuse (409): the reconciler's check
 * of a streamed run (its lease) or of its expiry, now, so a thread whose streaming request
 * died is usable at once rather than after the next pass. A workflow run's execution is not
 * asked here (no Step Functions call on this path): the passes judge those. True when the
 * run is no longer active (its claim is released).
 */
export async function endIfExecutorGone(ref: RunRef): Promise<boolean> {
  return (await recoverRun(ref, async () => undefined)) !== 'live';
}

export type ReconcileSummary = Record<Recovery, number> & { errors: number };

/**
 * One pass over the active-runs index: every run is checked (recoverRun); a run that cannot
 * be checked now (a throttled read, an unreachable Step Functions) is left for the next pass.
 */
export async function reconcileRuns(executionState?: (runId: string) => Promise<ExecutionState | undefined>): Promise<ReconcileSummary> {
  const summary: ReconcileSummary = { live: 0, gone: 0, expired: 0, failed: 0, cancelled: 0, errors: 0 };
  for (let shard = 0; shard < ACTIVE_RUN_SHARDS; shard++) {
    let start: string | undefined;
    do {
      const page = await listActiveRuns(shard, start);
      for (const ref of page.refs) {
        try {
          summary[await recoverRun(ref, executionState)]++;
        } catch (err) {
          summary.errors++;
          log.warn('run reconciler: a run could not be checked', { run_id: ref.runId, error: err instanceof Error ? err.message : String(err) });
        }
      }
      start = page.next;
    } while (start);
  }
  if (summary.expired + summary.failed + summary.cancelled + summary.errors > 0) log.info('run reconciler pass', { ...summary });
  return summary;
}

const refOf = (record: RunRecord): RunRef => ({ workspaceId: record.workspaceId, threadId: record.run.thread_id, runId: record.run.id });
