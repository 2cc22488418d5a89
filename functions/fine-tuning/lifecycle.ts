/**
 * The API side of the job lifecycle (issue «Fine-tuning jobs» items 1-2): create a job in
 * `validating_files` and queue its start; cancel it. The workflow side is ./steps.ts.
 *
 * Cancel: one conditional write moves an active job to `cancelled` (a terminal job is a 409)
 * and sets the cancel flag (`cancel_requested_at`). What happens next depends on whether the
 * submit step had claimed the job before that write (both writes are conditional on the same
 * item, so exactly one order happened):
 * - not claimed: nothing exists at the provider, so the execution is stopped at once
 *   (StopExecution, the hard stop);
 * - claimed: a provider job exists or is being created, so the execution's next step sees
 *   the flag and cancels it at the provider, then ends.
 */
import { randomInt } from 'node:crypto';
import { config } from '../shared/config';
import { badRequest, conflict, final, notFound, serverError } from '../shared/errors';
import { log, type LogContext } from '../shared/telemetry/logger';
import { executionArn, stopExecution } from '../shared/workflows/sfn';
import { sendMessage } from '../shared/workflows/sqs';
import { handGatewayFiles } from './gateway-files';
import { fineTuningAdapter } from './providers/index';
import { addEvent, createJob, getJob, newJobId, updateJob } from './store';
import type { CreateJobInput } from './schema';
import { ACTIVE_STATUSES, isTerminal, NO_ERROR, type FineTuningProviderKind, type JobRecord } from './types';
import type { StartJobMessage } from './workflow';

const now = () => Math.floor(Date.now() / 1000);

export interface NewJob {
  workspaceId: string;
  organizationId: string;
  providerSlug: string;
  providerKind: FineTuningProviderKind;
  input: CreateJobInput;
  /** The request creating it, for its log lines' trace id. */
  context?: LogContext;
}

export async function createFineTuningJob(n: NewJob): Promise<JobRecord> {
  const adapter = fineTuningAdapter(n.providerKind)!;
  const { input } = n;
  if (!adapter.methods.includes(input.method.type)) {
    throw badRequest(
      `${adapter.name} cannot train method '${input.method.type}'; it supports: ${adapter.methods.join(', ')}.`,
      'method.type',
      'unsupported_method',
    );
  }
  const id = newJobId();
  const seed = input.seed ?? randomInt(0, 2_147_483_647);
  const problem = adapter.checkSpec?.({
    gatewayJobId: id,
    model: input.model,
    trainingFile: input.training_file,
    validationFile: input.validation_file,
    suffix: input.suffix,
    seed,
    method: input.method,
    integrations: input.integrations,
  });
  if (problem) throw badRequest(problem.message, problem.param, 'invalid_value');
  const files = { training_file: input.training_file, validation_file: input.validation_file };
  const handed = await handGatewayFiles(n.workspaceId, n.providerSlug, input.method.type, files);

  const ts = now();
  const hyperparameters = input.method.type === 'supervised' ? input.method.supervised.hyperparameters : input.method.dpo.hyperparameters;
  const record: JobRecord = {
    id,
    created_at: ts,
    error: NO_ERROR,
    fine_tuned_model: null,
    finished_at: null,
    hyperparameters: {
      n_epochs: hyperparameters.n_epochs,
      batch_size: hyperparameters.batch_size,
      learning_rate_multiplier: hyperparameters.learning_rate_multiplier,
    },
    model: input.model,
    organization_id: n.organizationId,
    result_files: [],
    status: 'validating_files',
    trained_tokens: null,
    training_file: input.training_file,
    validation_file: input.validation_file,
    seed,
    integrations: input.integrations,
    estimated_finish: null,
    method: input.method,
    metadata: input.metadata,
    user_provided_suffix: input.suffix,
    workspace_id: n.workspaceId,
    provider_slug: n.providerSlug,
    provider_kind: n.providerKind,
    ...(handed.training_file !== files.training_file && handed.training_file ? { provider_training_file: handed.training_file } : {}),
    ...(handed.validation_file !== files.validation_file && handed.validation_file ? { provider_validation_file: handed.validation_file } : {}),
    updated_at: ts,
  };
  if (!(await createJob(record))) throw serverError();
  await addEvent(n.workspaceId, id, { level: 'info', message: `Created fine-tuning job: ${id}`, type: 'message', data: {} });
  await addEvent(n.workspaceId, id, {
    level: 'info',
    message: `Validating ${input.validation_file ? 'files' : 'training file'}: ${[input.training_file, input.validation_file].filter(Boolean).join(', ')}`,
    type: 'message',
    data: {},
  });

  const queueUrl = config().fineTuningQueueUrl;
  const message: StartJobMessage = { workspaceId: n.workspaceId, jobId: id };
  try {
    if (!queueUrl) throw new Error('FINE_TUNING_QUEUE_URL is not set');
    await sendMessage(queueUrl, message);
  } catch (err) {
    log.error('could not queue a fine-tuning job', { job_id: id, error: (err as Error).message }, n.context);
    await updateJob(n.workspaceId, id, {
      from: ['validating_files'],
      set: {
        status: 'failed',
        finished_at: now(),
        error: { code: 'workflow_unavailable', message: 'The gateway could not queue the job for processing; create it again.', param: '' },
      },
    });
    throw serverError();
  }
  log.info('fine-tuning job created', { job_id: id, provider: n.providerKind, model: input.model }, n.context);
  return record;
}

/** Final: the job will not become cancellable again (`x-should-retry: false`). */
const notCancellable = (job: JobRecord) =>
  final(
    conflict(
      `Fine-tuning job ${job.id} is already ${job.status}; only a job that is validating_files, queued or running can be cancelled.`,
      'job_not_cancellable',
    ),
  );

export async function cancelFineTuningJob(workspaceId: string, jobId: string, ctx?: LogContext): Promise<JobRecord> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const job = await getJob(workspaceId, jobId);
    if (!job) throw notFound(`No fine-tuning job '${jobId}' in this workspace.`, 'fine_tuning_job_id');
    if (isTerminal(job.status)) throw notCancellable(job);
    const ts = now();
    const cancelled = await updateJob(workspaceId, jobId, {
      from: ACTIVE_STATUSES,
      set: { status: 'cancelled', finished_at: ts, cancel_requested_at: ts, estimated_finish: null },
    });
    if (!cancelled) continue; // it moved (e.g. to a terminal state) meanwhile: look again
    await addEvent(workspaceId, jobId, {
      level: 'info',
      message: 'The job was cancelled at your request.',
      type: 'message',
      data: { previous_status: job.status },
    });
    log.info('fine-tuning job cancelled', { job_id: jobId, previous_status: job.status, submitted: cancelled.submit_claimed_at !== undefined }, ctx);
    if (cancelled.submit_claimed_at === undefined) await hardStop(jobId, ctx);
    return cancelled;
  }
  throw conflict(`Fine-tuning job ${jobId} kept changing while it was being cancelled; try again.`, 'concurrent_update');
}

/** Nothing reached the provider: stop the execution now (the workflow has nothing to undo). */
async function hardStop(jobId: string, ctx: LogContext | undefined): Promise<void> {
  const machine = config().fineTuningStateMachineArn;
  if (!machine) return;
  try {
    await stopExecution(executionArn(machine, jobId), 'JobCancelled', 'The job was cancelled before it reached the provider.');
  } catch (err) {
    // The job is cancelled either way: the workflow's next step sees the flag and ends.
    log.warn('could not stop the execution of a cancelled job', { job_id: jobId, error: (err as Error).message }, ctx);
  }
}
