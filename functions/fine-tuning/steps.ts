/**
 * The workflow side of the job lifecycle: one function per task of the fine-tuning state
 * machine (infra/workflows/fine-tuning.ts), plus the finalizer for executions that end
 * without a terminal job. Every step reads the job, acts, and writes its transition
 * conditionally; steps are re-entrant (a retried task or a re-run execution changes
 * nothing that is already done), and a terminal job is never written again.
 *
 * Failures: ProviderUnavailable is thrown (the state machine retries it with backoff);
 * ProviderRejected fails the job at once with the provider's own message.
 */
import { config } from '../shared/config';
import { log } from '../shared/telemetry/logger';
import { connect, ProviderRejected, rejection, send, sendOk, type ProviderConnection } from './providers/client';
import type { ProviderEvent, ProviderJobState } from './providers/types';
import { addEvent, addProviderEvent, getJob, hasProviderEvent, updateJob } from './store';
import { ACTIVE_STATUSES, isTerminal, type JobError, type JobRecord, type JobStatus } from './types';
import { sendMessage } from '../shared/workflows/sqs';
import { continuationName, type FineTuneStepEvent, type FineTuneStepResult, type StartJobMessage } from './workflow';

const now = () => Math.floor(Date.now() / 1000);
const END: FineTuneStepResult = { next: 'end' };
const waitForProgress = (): FineTuneStepResult => ({ next: 'wait', waitSeconds: config().fineTuningPollSeconds });

/** Active statuses in order: the mirror never moves a job backwards. */
const ORDER: Record<string, number> = { validating_files: 0, queued: 1, running: 2 };
const forward = (current: JobStatus, next: JobStatus): JobStatus => (ORDER[next]! > ORDER[current]! ? next : current);

const info = (message: string, data: Record<string, unknown> | null = {}) => ({ level: 'info' as const, message, type: 'message' as const, data });

export async function runStep(event: FineTuneStepEvent): Promise<FineTuneStepResult> {
  const job = await getJob(event.workspaceId, event.jobId);
  if (!job) {
    log.warn('fine-tuning step for a job that does not exist', { job_id: event.jobId, action: event.action });
    return END;
  }
  switch (event.action) {
    case 'validate':
      return guarded(job, validate);
    case 'submit':
      return guarded(job, submit);
    case 'poll':
      return counted(await guarded(job, poll), event.step?.polls ?? 0);
    case 'continue':
      if (!isTerminal(job.status)) await continueInNewExecution(job, event.execution ?? job.id);
      return END;
    case 'fail':
      await failJob(job, {
        code: 'workflow_error',
        message: `The gateway could not complete the job: ${describeTaskError(event.error)}`,
        param: '',
      });
      return END;
  }
}

/** Runs a step; a permanent provider refusal fails the job instead of the execution. */
async function guarded(job: JobRecord, step: (job: JobRecord) => Promise<FineTuneStepResult>): Promise<FineTuneStepResult> {
  try {
    return await step(job);
  } catch (err) {
    if (!(err instanceof ProviderRejected)) throw err;
    await failJob(job, { code: err.code, message: err.message, param: err.param });
    return END;
  }
}

/**
 * One more poll made by this execution: past FINE_TUNING_POLLS_PER_EXECUTION the workflow
 * hands the job to a new execution instead of waiting again, so no execution reaches Step
 * Functions' history limit however long the provider trains.
 */
function counted(result: FineTuneStepResult, pollsBefore: number): FineTuneStepResult {
  if (result.next !== 'wait') return result;
  const polls = pollsBefore + 1;
  return polls >= config().fineTuningPollsPerExecution ? { next: 'continue' } : { ...result, polls };
}

/**
 * Queue the job's next execution (the start consumer starts it by name; a worker invoked
 * by the state machine may not start the machine itself: a dependency cycle in CDK). The
 * name is the idempotency key, so a retried task or a redelivered message starts one.
 */
async function continueInNewExecution(job: JobRecord, execution: string): Promise<void> {
  const queueUrl = config().fineTuningQueueUrl;
  if (!queueUrl) throw new Error('FINE_TUNING_QUEUE_URL is not set');
  const message: StartJobMessage = { workspaceId: job.workspace_id, jobId: job.id, execution: continuationName(execution) };
  await sendMessage(queueUrl, message);
  log.info('fine-tuning job continues in a new execution', { job_id: job.id, from: execution, to: message.execution });
}

function describeTaskError(error: FineTuneStepEvent['error']): string {
  if (!error) return 'a workflow task failed.';
  let cause = error.Cause ?? '';
  try {
    // Lambda failures arrive as {"errorType", "errorMessage", ...} in Cause.
    const parsed = JSON.parse(cause) as { errorMessage?: string };
    if (parsed.errorMessage) cause = parsed.errorMessage;
  } catch {
    // a plain message
  }
  return `${error.Error ?? 'Error'}${cause ? `: ${cause.slice(0, 500)}` : ''}`;
}

// ---- validate ------------------------------------------------------------------------------

async function validate(job: JobRecord): Promise<FineTuneStepResult> {
  if (isTerminal(job.status)) return finishCancelled(job);
  // Re-run after a restart: the job is already at the provider.
  if (job.provider_job_id) return waitForProgress();
  const provider = await connect(job.workspace_id, job.provider_slug);
  for (const [field, fileId] of [
    ['training_file', job.provider_training_file ?? job.training_file],
    ['validation_file', job.provider_validation_file ?? job.validation_file],
  ] as const) {
    if (!fileId) continue;
    const problem = await checkFile(provider, fileId);
    if (problem) {
      await failJob(job, {
        code: field === 'training_file' ? 'invalid_training_file' : 'invalid_validation_file',
        message: `${field === 'training_file' ? 'Training' : 'Validation'} file '${fileId}' ${problem}`,
        param: field,
      });
      return END;
    }
  }
  // The checks take a while: a job cancelled meanwhile (and its execution stopped) ends here.
  const current = await getJob(job.workspace_id, job.id);
  if (!current || isTerminal(current.status)) return END;
  await addEvent(job.workspace_id, job.id, info('Files validated, submitting the job to the provider.'));
  return { next: 'submit' };
}

/** Undefined when the file is usable, else why not (completes "File 'x' ..."). */
async function checkFile(p: ProviderConnection, fileId: string): Promise<string | undefined> {
  const res = await send(p.adapter.name, p.adapter.retrieveFile(p.endpoint, fileId));
  if (res.status === 404) return `was not found at ${p.adapter.name}. Upload it there first (for example POST /v1/files through the gateway).`;
  if (res.status < 200 || res.status >= 300) throw rejection(p.adapter.name, res);
  const check = p.adapter.parseFile?.(res.body) ?? { usable: true };
  return check.usable ? undefined : `cannot be used for training: ${check.reason ?? 'the provider reports it unusable'}.`;
}

// ---- submit --------------------------------------------------------------------------------

async function submit(job: JobRecord): Promise<FineTuneStepResult> {
  if (isTerminal(job.status)) return finishCancelled(job);
  if (job.provider_job_id) return waitForProgress();
  // Claim the job for submission; the cancel API's write decides against this one.
  const claimed = await updateJob(job.workspace_id, job.id, { from: ['validating_files'], set: { submit_claimed_at: now() } });
  if (!claimed) {
    const current = await getJob(job.workspace_id, job.id);
    return current ? finishCancelled(current) : END;
  }
  const provider = await connect(job.workspace_id, job.provider_slug);
  // An earlier attempt sent the create and lost the answer (timeout, 5xx after creating):
  // the provider may hold the job already.
  const existing = job.submit_claimed_at !== undefined ? await findSubmitted(provider, job) : undefined;
  if (existing) return record(provider, job, existing, []);
  const { request, warnings } = provider.adapter.createJob(provider.endpoint, {
    gatewayJobId: job.id,
    model: job.model,
    trainingFile: job.provider_training_file ?? job.training_file,
    validationFile: job.provider_validation_file ?? job.validation_file,
    suffix: job.user_provided_suffix,
    seed: job.seed,
    method: job.method,
    integrations: job.integrations,
  });
  const state = provider.adapter.parseJob(await sendOk(provider.adapter.name, request));
  if (!state.id) throw new ProviderRejected(`${provider.adapter.name} accepted the job but returned no job id.`, 502, 'invalid_provider_response', '');
  return record(provider, job, state, warnings);
}

/** The provider's job for this gateway job, when an earlier submit created one and the provider can say. */
async function findSubmitted(provider: ProviderConnection, job: JobRecord): Promise<ProviderJobState | undefined> {
  const { adapter } = provider;
  if (!adapter.findJobs || !adapter.parseJobList) return undefined;
  const found = adapter.parseJobList(await sendOk(adapter.name, adapter.findJobs(provider.endpoint, job.id))).find((s) => s.id);
  if (found) log.info('fine-tuning submit: found the job an earlier attempt created', { job_id: job.id, provider_job_id: found.id });
  return found;
}

async function record(provider: ProviderConnection, job: JobRecord, state: ProviderJobState, warnings: string[]): Promise<FineTuneStepResult> {
  for (const w of warnings) await addEvent(job.workspace_id, job.id, { level: 'warn', message: w, type: 'message', data: null });
  const recorded = await updateJob(job.workspace_id, job.id, {
    from: ['validating_files'],
    set: { provider_job_id: state.id, provider_status: state.providerStatus },
  });
  if (!recorded) {
    // Cancelled while the provider was creating it: undo at the provider straight away.
    await cancelAtProvider(provider, job, state.id);
    return END;
  }
  await addEvent(job.workspace_id, job.id, info(`Submitted to ${provider.adapter.name} as job ${state.id}.`, { provider_job_id: state.id }));
  return apply(provider, recorded, state);
}

// ---- poll ----------------------------------------------------------------------------------

async function poll(job: JobRecord): Promise<FineTuneStepResult> {
  if (isTerminal(job.status)) return finishCancelled(job);
  if (!job.provider_job_id) {
    // Only reachable through a re-run execution whose submit never recorded: submit again.
    return submit(job);
  }
  const provider = await connect(job.workspace_id, job.provider_slug);
  const body = await sendOk(provider.adapter.name, provider.adapter.retrieveJob(provider.endpoint, job.provider_job_id));
  const state = provider.adapter.parseJob(body);
  const events = provider.adapter.listEvents
    ? provider.adapter.parseEvents(await sendOk(provider.adapter.name, provider.adapter.listEvents(provider.endpoint, job.provider_job_id)))
    : provider.adapter.parseEvents(body);
  await recordProviderEvents(job, events);
  return apply(provider, job, state);
}

/**
 * Record the provider's events not seen before, oldest first. A poll lists the newest 100,
 * most of them recorded at earlier polls: walking back from the newest to the first one
 * already recorded costs a read or two, where writing each (a conditional transaction)
 * would cost four write units per listed event and poll. Events are written oldest first,
 * so a poll that dies midway leaves a recorded prefix, never a gap.
 */
async function recordProviderEvents(job: JobRecord, events: ProviderEvent[]): Promise<void> {
  const fresh: ProviderEvent[] = [];
  for (const e of [...events].sort((a, b) => b.createdAt - a.createdAt)) {
    if (await hasProviderEvent(job.workspace_id, job.id, e.id)) break;
    fresh.push(e);
  }
  for (const e of fresh.reverse()) {
    await addProviderEvent(job.workspace_id, job.id, e.id, {
      created_at: e.createdAt,
      level: e.level,
      message: e.message,
      type: e.type,
      data: e.data,
    });
  }
}

/** Mirror a provider job onto the gateway job; answers whether to keep polling. */
async function apply(provider: ProviderConnection, job: JobRecord, state: ProviderJobState): Promise<FineTuneStepResult> {
  const ts = now();
  const hyperparameters = { ...job.hyperparameters, ...state.hyperparameters };
  if (!isTerminal(state.status)) {
    const status = forward(job.status, state.status);
    const estimated = status === 'running' ? state.estimatedFinish : null;
    if (status !== job.status || estimated !== job.estimated_finish || state.providerStatus !== job.provider_status) {
      const updated = await updateJob(job.workspace_id, job.id, {
        from: ACTIVE_STATUSES,
        set: { status, estimated_finish: estimated, provider_status: state.providerStatus, hyperparameters },
      });
      if (!updated) return afterRace(provider, job);
      if (status !== job.status) {
        await addEvent(
          job.workspace_id,
          job.id,
          info(
            status === 'running' ? 'Fine-tuning job started.' : status === 'queued' ? 'Job enqueued at the provider.' : 'The provider is validating the files.',
          ),
        );
      }
    }
    return waitForProgress();
  }

  let set: Partial<JobRecord>;
  if (state.status === 'succeeded') {
    set = {
      status: 'succeeded',
      fine_tuned_model: state.fineTunedModel,
      trained_tokens: state.trainedTokens,
      result_files: state.resultFiles,
    };
  } else if (state.status === 'failed') {
    set = {
      status: 'failed',
      error: state.error ?? { code: 'provider_job_failed', message: `${provider.adapter.name} reported that the job failed.`, param: '' },
    };
  } else {
    set = { status: 'cancelled' };
  }
  const updated = await updateJob(job.workspace_id, job.id, {
    from: ACTIVE_STATUSES,
    set: {
      ...set,
      finished_at: ts,
      estimated_finish: null,
      provider_status: state.providerStatus,
      hyperparameters,
      ...(state.trainedTokens !== null ? { trained_tokens: state.trainedTokens } : {}),
    },
  });
  if (!updated) return afterRace(provider, job);
  if (updated.status === 'succeeded') {
    if (updated.fine_tuned_model)
      await addEvent(
        job.workspace_id,
        job.id,
        info(`New fine-tuned model created: ${updated.fine_tuned_model}`, { fine_tuned_model: updated.fine_tuned_model }),
      );
    await addEvent(job.workspace_id, job.id, info('The job has successfully completed.', { trained_tokens: updated.trained_tokens }));
  } else if (updated.status === 'failed') {
    await addEvent(job.workspace_id, job.id, {
      level: 'error',
      message: `The job failed: ${updated.error.message}`,
      type: 'message',
      data: { code: updated.error.code },
    });
  } else {
    await addEvent(job.workspace_id, job.id, info(`The job was cancelled at ${provider.adapter.name}.`));
  }
  log.info('fine-tuning job finished', { job_id: job.id, status: updated.status });
  return END;
}

/** A conditional write lost: the job changed under us (cancelled by the API). */
async function afterRace(provider: ProviderConnection, job: JobRecord): Promise<FineTuneStepResult> {
  const current = await getJob(job.workspace_id, job.id);
  if (!current) return END;
  if (isTerminal(current.status)) return finishCancelled(current, provider);
  return waitForProgress();
}

// ---- cancellation and failure ----------------------------------------------------------------

/**
 * A terminal job seen by a step: when the user cancelled it after it reached the provider,
 * cancel the provider job (the cancel flag's work) and end. Nothing is written to the job.
 */
async function finishCancelled(job: JobRecord, provider?: ProviderConnection): Promise<FineTuneStepResult> {
  if (job.status !== 'cancelled' || job.cancel_requested_at === undefined || !job.provider_job_id) return END;
  try {
    await cancelAtProvider(provider ?? (await connect(job.workspace_id, job.provider_slug)), job, job.provider_job_id);
  } catch (err) {
    if (!(err instanceof ProviderRejected)) throw err;
    await addEvent(job.workspace_id, job.id, {
      level: 'warn',
      message: `Could not cancel the provider job ${job.provider_job_id}: ${err.message}`,
      type: 'message',
      data: null,
    });
  }
  return END;
}

async function cancelAtProvider(provider: ProviderConnection, job: JobRecord, providerJobId: string): Promise<void> {
  const res = await send(provider.adapter.name, provider.adapter.cancelJob(provider.endpoint, providerJobId));
  if (res.status >= 200 && res.status < 300) {
    await addEvent(
      job.workspace_id,
      job.id,
      info(`Cancelled the provider job ${providerJobId} at ${provider.adapter.name}.`, { provider_job_id: providerJobId }),
    );
  } else {
    // Typically: it had already finished. The gateway job stays cancelled either way.
    await addEvent(job.workspace_id, job.id, {
      level: 'warn',
      message: `${provider.adapter.name} did not cancel job ${providerJobId} (HTTP ${res.status}); it may have finished already.`,
      type: 'message',
      data: { provider_job_id: providerJobId },
    });
  }
  log.info('fine-tuning provider job cancelled', { job_id: job.id, provider_status: res.status });
}

export async function failJob(job: JobRecord, error: JobError): Promise<JobRecord | undefined> {
  const updated = await updateJob(job.workspace_id, job.id, {
    from: ACTIVE_STATUSES,
    set: { status: 'failed', error, finished_at: now(), estimated_finish: null },
  });
  if (updated) {
    await addEvent(job.workspace_id, job.id, { level: 'error', message: `The job failed: ${error.message}`, type: 'message', data: { code: error.code } });
    log.info('fine-tuning job failed', { job_id: job.id, code: error.code });
  }
  return updated;
}

// ---- finalizer -----------------------------------------------------------------------------

const FINAL: Record<string, Pick<JobError, 'code' | 'message'>> = {
  TIMED_OUT: { code: 'workflow_timed_out', message: 'The job did not reach a final state within the workflow time limit.' },
  ABORTED: { code: 'workflow_stopped', message: 'The job workflow was stopped before the job finished.' },
  FAILED: { code: 'workflow_error', message: 'The job workflow failed.' },
};

/** An execution ended FAILED / TIMED_OUT / ABORTED: an active job can only be failed now. */
export async function finalizeExecution(workspaceId: string, jobId: string, status: string, cause?: string | null): Promise<void> {
  const job = await getJob(workspaceId, jobId);
  if (!job || isTerminal(job.status)) return;
  const final = FINAL[status] ?? FINAL.FAILED!;
  await failJob(job, { ...final, message: cause ? `${final.message} ${cause.slice(0, 300)}` : final.message, param: '' });
}
