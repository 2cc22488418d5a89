import type { FineTuningJob, JobRecord } from './types';

/**
 * The stored job as the API shows it: every required field, integer `*_at`,
 * `fine_tuned_model`/`finished_at`/`trained_tokens` null until the job has them,
 * `estimated_finish` null unless running, `error` always an object. Internal fields (the
 * provider job id, the managed provider) stay inside.
 */
export function toPublicJob(r: JobRecord): FineTuningJob {
  return {
    object: 'fine_tuning.job',
    id: r.id,
    created_at: r.created_at,
    error: r.error,
    fine_tuned_model: r.fine_tuned_model ?? null,
    finished_at: r.finished_at ?? null,
    hyperparameters: r.hyperparameters,
    model: r.model,
    organization_id: r.organization_id,
    result_files: r.result_files ?? [],
    status: r.status,
    trained_tokens: r.trained_tokens ?? null,
    training_file: r.training_file,
    validation_file: r.validation_file ?? null,
    seed: r.seed,
    integrations: r.integrations ?? null,
    estimated_finish: r.status === 'running' ? (r.estimated_finish ?? null) : null,
    method: r.method,
    metadata: r.metadata ?? null,
    user_provided_suffix: r.user_provided_suffix ?? null,
  };
}
