import { finalizeRunExecution } from '../assistants/workflow/steps';
import { parseEvent } from '../shared/workflows/events';
import { log } from '../shared/telemetry/logger';
import { executionInput, executionStatusChange, runExecutionInput } from './events';

/**
 * EventBridge "Step Functions Execution Status Change" (FAILED, TIMED_OUT, ABORTED) of the
 * runs machine: a run being cancelled (the API stops its execution) becomes `cancelled`;
 * any other run still active when its execution ended is failed (`last_error`
 * server_error). Either way the thread's claim is released. A run already terminal, or
 * executed inline by a streaming request, is left alone.
 */
export async function handler(event: unknown): Promise<void> {
  const { detail } = parseEvent(executionStatusChange, event, 'run-finalize');
  const run = executionInput(runExecutionInput, detail.input);
  if (!run) {
    log.error('execution status change without a run reference', { execution: detail.executionArn });
    return;
  }
  await finalizeRunExecution({ workspaceId: run.workspaceId, threadId: run.threadId, runId: run.runId }, detail.status, detail.cause);
}
