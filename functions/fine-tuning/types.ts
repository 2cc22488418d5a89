/**
 * Fine-tuning jobs as the API shows them and as the jobs table stores them.
 */

export const JOB_STATUSES = ['validating_files', 'queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const TERMINAL_STATUSES: readonly JobStatus[] = ['succeeded', 'failed', 'cancelled'];
export const ACTIVE_STATUSES: readonly JobStatus[] = ['validating_files', 'queued', 'running'];
export const isTerminal = (s: JobStatus) => TERMINAL_STATUSES.includes(s);

export type Auto = 'auto';

export interface Hyperparameters {
  n_epochs: number | Auto;
  batch_size: number | Auto;
  learning_rate_multiplier: number | Auto;
}

export interface DpoHyperparameters extends Hyperparameters {
  beta: number | Auto;
}

export type Method = { type: 'supervised'; supervised: { hyperparameters: Hyperparameters } } | { type: 'dpo'; dpo: { hyperparameters: DpoHyperparameters } };

export interface WandbIntegration {
  type: 'wandb';
  wandb: { project: string; name?: string | null; entity?: string | null; tags?: string[] };
}

/** Always an object; strings filled on failure, empty otherwise. */
export interface JobError {
  code: string;
  message: string;
  param: string;
}

export const NO_ERROR: JobError = { code: '', message: '', param: '' };

/** The `fine_tuning.job` object plus the OpenAI fields SDKs know. */
export interface FineTuningJob {
  object: 'fine_tuning.job';
  id: string;
  created_at: number;
  error: JobError;
  fine_tuned_model: string | null;
  finished_at: number | null;
  hyperparameters: Hyperparameters;
  model: string;
  organization_id: string;
  result_files: string[];
  status: JobStatus;
  trained_tokens: number | null;
  training_file: string;
  validation_file: string | null;
  seed: number;
  integrations: WandbIntegration[] | null;
  estimated_finish: number | null;
  method: Method;
  metadata: Record<string, string> | null;
  user_provided_suffix: string | null;
}

/** `fine_tuning.job.event` */
export interface FineTuningJobEvent {
  object: 'fine_tuning.job.event';
  id: string;
  created_at: number;
  level: 'info' | 'warn' | 'error';
  message: string;
  type: 'message' | 'metrics';
  data: Record<string, unknown> | null;
}

/** Provider kinds that have a fine-tuning adapter (functions/fine-tuning/providers). */
export type FineTuningProviderKind = 'openai' | 'azure-openai' | 'together-ai' | 'fireworks-ai' | 'mistral-ai';

/** A job as stored (jobs table): the public fields plus what the workflow needs. */
export interface JobRecord extends Omit<FineTuningJob, 'object'> {
  workspace_id: string;
  /** The managed provider (its slug; credentials are resolved when the workflow runs). */
  provider_slug: string;
  provider_kind: FineTuningProviderKind;
  /** Job id at the provider, once submitted. */
  provider_job_id?: string;
  /** The provider's copies of gateway files (./gateway-files.ts), when the job names any. */
  provider_training_file?: string;
  provider_validation_file?: string;
  /** The provider's own status word, last seen. */
  provider_status?: string;
  /** Set by the submit step before it calls the provider (serialises with cancel). */
  submit_claimed_at?: number;
  cancel_requested_at?: number;
  updated_at: number;
}
