import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { loadRunState } from '../assistants/engine/state';
import type { RunExecutionInput } from '../assistants/workflow/contract';
import { isTerminal } from '../assistants/types';
import { config } from '../shared/config';
import { log } from '../shared/telemetry/logger';
import { startExecution } from '../shared/workflows/sfn';
import { parseEvent } from '../shared/workflows/events';
import { createQueueConsumer } from '../shared/workflows/sqs';
import { runExecutionInput } from './events';

/**
 * Consumer of the runs FIFO queue (group = thread id): one execution per run, named after
 * the run with the run's reference as input, so a redelivered or duplicated message starts
 * nothing new (a running execution of that name is returned; a finished one is
 * ExecutionAlreadyExists, which counts as started). A run that has ended, or that a
 * streaming request executes inline, is not started. A run cancelled before its turn is
 * started all the same: the machine's first task finishes the cancel. A malformed message is
 * dropped (logged).
 */
const consume = createQueueConsumer(async (body) => {
  const msg = parseEvent(runExecutionInput, body, 'run-start');
  const input: RunExecutionInput = { workspaceId: msg.workspaceId, threadId: msg.threadId, runId: msg.runId };
  const loaded = await loadRunState(input);
  if (!loaded || isTerminal(loaded.record.run.status) || loaded.state.inline) {
    log.info('run start message for a run that needs no execution; dropped', { run_id: input.runId, status: loaded?.record.run.status ?? 'missing' });
    return;
  }
  const machine = config().runStateMachineArn;
  if (!machine) throw new Error('RUN_STATE_MACHINE_ARN is not set');
  const started = await startExecution(machine, input.runId, input);
  log.info('run execution started', { run_id: input.runId, created: started.created });
});

export const handler = (event: SQSEvent): Promise<SQSBatchResponse> => consume(event);
