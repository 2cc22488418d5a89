import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { config } from '../shared/config';
import { log } from '../shared/telemetry/logger';
import { startExecution } from '../shared/workflows/sfn';
import { createQueueConsumer } from '../shared/workflows/sqs';
import { getJob } from '../fine-tuning/store';
import { isTerminal } from '../fine-tuning/types';
import type { FineTuningExecutionInput } from '../fine-tuning/workflow';
import { parseEvent } from '../shared/workflows/events';
import { startJobMessage } from './events';

/**
 * Consumer of the fine-tuning jobs queue: one execution per message, named after the job (or,
 * for a continuation, the name the message gives), so a redelivered message starts nothing new. A job cancelled before its turn is not started; a malformed message is dropped (logged).
 */
const consume = createQueueConsumer(async (body) => {
  const msg = parseEvent(startJobMessage, body, 'fine-tune-start');
  const job = await getJob(msg.workspaceId, msg.jobId);
  if (!job || isTerminal(job.status)) return;
  const machine = config().fineTuningStateMachineArn;
  if (!machine) throw new Error('FINE_TUNING_STATE_MACHINE_ARN is not set');
  const input: FineTuningExecutionInput = { workspaceId: msg.workspaceId, jobId: msg.jobId };
  const name = msg.execution ?? msg.jobId;
  const started = await startExecution(machine, name, input);
  log.info('fine-tuning execution started', { job_id: msg.jobId, execution: name, created: started.created });
});

export const handler = (event: SQSEvent): Promise<SQSBatchResponse> => consume(event);
