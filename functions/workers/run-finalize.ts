import type { EventBridgeEvent } from 'aws-lambda';
import { finalizeRunExecution } from '../assistants/run-steps';
import type { RunExecutionInput } from '../assistants/run-workflow';
import { log } from '../shared/telemetry/logger';

interface ExecutionStatusChange {
  executionArn: string;
  status: string;
  input: string | null;
  cause?: string | null;
}

/**
 * EventBridge "Step Functions Execution Status Change" (FAILED, TIMED_OUT, ABORTED) of the
 * runs machine: a run being cancelled (the API stops its execution) becomes `cancelled`;
 * any other run still active when its execution ended is failed (`last_error`
 * server_error). Either way the thread's claim is released. A run already terminal, or
 * executed inline by a streaming request, is left alone.
 */
export async function handler(event: EventBridgeEvent<'Step Functions Execution Status Change', ExecutionStatusChange>): Promise<void> {
  let input: Partial<RunExecutionInput> = {};
  try {
    input = JSON.parse(event.detail.input ?? '{}') as Partial<RunExecutionInput>;
  } catch {
    // handled below
  }
  if (typeof input.workspaceId !== 'string' || typeof input.threadId !== 'string' || typeof input.runId !== 'string') {
    log.error('execution status change without a run reference', { execution: event.detail.executionArn });
    return;
  }
  await finalizeRunExecution({ workspaceId: input.workspaceId, threadId: input.threadId, runId: input.runId }, event.detail.status, event.detail.cause);
}
