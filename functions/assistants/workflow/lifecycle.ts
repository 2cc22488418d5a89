import { config } from '../../shared/config';
import { log, type LogContext } from '../../shared/telemetry/logger';
import { executionArn, sendTaskSuccess, stopExecution } from '../../shared/workflows/sfn';
import { sendMessage } from '../../shared/workflows/sqs';
import { cancelRunNow } from '../engine/model-step';
import { submitToolOutputsToRun } from '../engine/submit';
import { takeTaskToken } from './steps';
import type { RunExecutionInput, ToolOutputsSubmitted } from './contract';
import { getRun, runRef, type RunRecord } from '../store/runs';
import type { Run, ToolOutput } from '../types';

/**
 * Where the API hands runs to the asynchronous lifecycle. The routes
 * validate, write the record (queued / cancelling) and then call these hooks. By default
 * they drive the runs workflow (SQS FIFO + Step Functions, infra/workflows/runs.ts):
 *
 * - startRun: the run's reference goes to the FIFO queue (group = thread id, so a thread's
 *   commands stay in order; dedup id = run id); its consumer (functions/workers/run-start.ts)
 *   starts the execution named after the run, so a redelivery starts nothing new.
 * - submitToolOutputs: the outputs are stored and the run resumed (engine/submit.ts, one
 *   conditional transition), then the WaitForToolOutputs task is answered with the token
 *   the run stored for that wait (taken once; none yet: the task finds the run resumed).
 * - cancelRun: the run is `cancelling` already; its execution is stopped (hard stop) and
 *   the finalizer (functions/workers/run-finalize.ts) makes it `cancelled` and releases the
 *   thread. With no execution running (not started yet, or lost), it is cancelled at once;
 *   an execution started later finds it cancelled.
 *
 * Tests can swap them with setLifecycleHooks. Streamed runs (`stream: true`) do not go
 * through these hooks: the engine (engine/model-step.ts) runs them inline.
 */
export interface LifecycleHooks {
  /** A run was written `queued` and holds its thread's claim: enqueue it. */
  startRun(record: RunRecord): Promise<void>;
  /**
   * Tool outputs for a run in `requires_action` (ids checked against required_action):
   * resume it. May return the run as it stands afterwards (the API returns that run).
   */
  submitToolOutputs(record: RunRecord, outputs: ToolOutput[], ctx?: LogContext): Promise<Run | undefined>;
  /** A run moved to `cancelling`: stop it and finish it as `cancelled`. */
  cancelRun(record: RunRecord, ctx?: LogContext): Promise<void>;
}

function required(value: string | undefined, name: string): string {
  if (!value) throw new Error(`${name} is not set: the runs workflow is not configured.`);
  return value;
}

export const workflowHooks: LifecycleHooks = {
  async startRun(record) {
    const queueUrl = required(config().runQueueUrl, 'RUN_QUEUE_URL');
    const message: RunExecutionInput = { workspaceId: record.workspaceId, threadId: record.run.thread_id, runId: record.run.id };
    await sendMessage(queueUrl, message, { groupId: record.run.thread_id, deduplicationId: record.run.id });
  },

  async submitToolOutputs(record, outputs, ctx) {
    const resumed = await submitToolOutputsToRun(record, outputs);
    // Not resumed: another submit won, the run was cancelled meanwhile, or it expired.
    if (!resumed) return (await getRun(runRef(record)))?.run;
    const token = await takeTaskToken(runRef(record), resumed.calls);
    if (token) {
      const answer: ToolOutputsSubmitted = { resumed: true };
      const answered = await sendTaskSuccess(token, answer);
      // A closed token: the wait timed out just now; MarkExpired finds the run resumed and
      // continues it (steps.ts), or the finalizer fails it if the execution is gone.
      if (!answered) log.warn('tool outputs: the waiting task had already closed', { run_id: record.run.id }, ctx);
    }
    return resumed.record.run;
  },

  async cancelRun(record, ctx) {
    const machine = required(config().runStateMachineArn, 'RUN_STATE_MACHINE_ARN');
    const stopped = await stopExecution(executionArn(machine, record.run.id), 'RunCancelled', 'The run was cancelled through the API.');
    log.info('run cancel: execution stop requested', { run_id: record.run.id, stopped }, ctx);
    // No execution running (not started yet, or lost): nothing else would finish the cancel
    // soon. An execution that starts later finds the run cancelled and ends.
    if (!stopped) await cancelRunNow(record);
  },
};

let hooks: LifecycleHooks = { ...workflowHooks };

/** Replace some hooks; returns a function that restores the previous ones. */
export function setLifecycleHooks(replacement: Partial<LifecycleHooks>): () => void {
  const previous = hooks;
  hooks = { ...hooks, ...replacement };
  return () => {
    hooks = previous;
  };
}

export const startRun = (record: RunRecord) => hooks.startRun(record);
export const submitToolOutputs = (record: RunRecord, outputs: ToolOutput[], ctx?: LogContext) => hooks.submitToolOutputs(record, outputs, ctx);
export const cancelRun = (record: RunRecord, ctx?: LogContext) => hooks.cancelRun(record, ctx);
