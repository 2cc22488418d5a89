import type { EventBridgeEvent } from 'aws-lambda';
import { finalizeExecution } from '../fine-tuning/steps';
import type { FineTuningExecutionInput } from '../fine-tuning/workflow';
import { log } from '../shared/telemetry/logger';

interface ExecutionStatusChange {
  executionArn: string;
  status: string;
  input: string | null;
  cause?: string | null;
}

/**
 * EventBridge "Step Functions Execution Status Change" (FAILED, TIMED_OUT, ABORTED) of the
 * fine-tuning machine: a job still active when its execution ended is failed, so no job
 * stays `running` forever. A job already terminal (e.g. cancelled, then stopped) is left alone.
 */
export async function handler(event: EventBridgeEvent<'Step Functions Execution Status Change', ExecutionStatusChange>): Promise<void> {
  let input: Partial<FineTuningExecutionInput> = {};
  try {
    input = JSON.parse(event.detail.input ?? '{}') as Partial<FineTuningExecutionInput>;
  } catch {
    // handled below
  }
  if (typeof input.workspaceId !== 'string' || typeof input.jobId !== 'string') {
    log.error('execution status change without a job reference', { execution: event.detail.executionArn });
    return;
  }
  await finalizeExecution(input.workspaceId, input.jobId, event.detail.status, event.detail.cause);
}
