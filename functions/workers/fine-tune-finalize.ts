import { finalizeExecution } from '../fine-tuning/steps';
import { parseEvent } from '../shared/workflows/events';
import { log } from '../shared/telemetry/logger';
import { executionInput, executionStatusChange, fineTuningExecutionInput } from './events';

/**
 * EventBridge "Step Functions Execution Status Change" (FAILED, TIMED_OUT, ABORTED) of the
 * fine-tuning machine: a job still active when its execution ended is failed, so no job
 * stays `running` forever. A job already terminal (e.g. cancelled, then stopped) is left alone.
 */
export async function handler(event: unknown): Promise<void> {
  const { detail } = parseEvent(executionStatusChange, event, 'fine-tune-finalize');
  const job = executionInput(fineTuningExecutionInput, detail.input);
  if (!job) {
    log.error('execution status change without a job reference', { execution: detail.executionArn });
    return;
  }
  await finalizeExecution(job.workspaceId, job.jobId, detail.status, detail.cause);
}
