/**
 * Mistral fine-tuning (`https://api.mistral.ai/v1/fine_tuning/jobs`), mapped onto the OpenAI
 * job model:
 * - create body: `training_files: [{file_id, weight}]`, `validation_files: [id]`,
 *   `hyperparameters: {epochs}`, `suffix`, `auto_start: true` (otherwise the job stops at
 *   VALIDATED and waits for `/start`). Mistral takes an absolute `learning_rate` and no batch
 *   size or seed; those are not sent (warned). W&B needs an API key there: not sent. No DPO.
 * - statuses: QUEUED -> queued; STARTED/VALIDATING/VALIDATED -> validating_files (the mirror
 *   never moves a job backwards); RUNNING/CANCELLATION_REQUESTED -> running; SUCCESS ->
 *   succeeded; FAILED/FAILED_VALIDATION -> failed; CANCELLED -> cancelled.
 * - events come inside the job (`events: [{name, data, created_at}]`), without ids.
 */
import type { JobStatus } from '../types';
import { arr, derivedEventId, failure, get, int, obj, post, postForm, seg, str, unixSeconds } from './shape';
import type { FineTuningAdapter, ProviderEvent } from './types';

const STATUS: Record<string, JobStatus> = {
  QUEUED: 'queued',
  STARTED: 'validating_files',
  VALIDATING: 'validating_files',
  VALIDATED: 'validating_files',
  RUNNING: 'running',
  CANCELLATION_REQUESTED: 'running',
  SUCCESS: 'succeeded',
  FAILED: 'failed',
  FAILED_VALIDATION: 'failed',
  CANCELLED: 'cancelled',
};

export const mistralFineTuning: FineTuningAdapter = {
  kind: 'mistral-ai',
  name: 'Mistral AI',
  methods: ['supervised'],
  retrieveFile: (e, fileId) => get(`${e.base}/files/${seg(fileId)}`, e),
  uploadFile: (e, file) => postForm(`${e.base}/files`, { purpose: 'fine-tune' }, { field: 'file', ...file }, e),
  createJob(e, spec) {
    const warnings: string[] = [];
    if (spec.method.type !== 'supervised') throw new Error('Mistral AI fine-tuning is supervised only');
    const hp = spec.method.supervised.hyperparameters;
    const body: Record<string, unknown> = {
      model: spec.model,
      training_files: [{ file_id: spec.trainingFile, weight: 1 }],
      auto_start: true,
      hyperparameters: hp.n_epochs !== 'auto' ? { epochs: hp.n_epochs } : {},
    };
    if (spec.validationFile) body.validation_files = [spec.validationFile];
    if (spec.suffix) body.suffix = spec.suffix;
    if (hp.learning_rate_multiplier !== 'auto') warnings.push('Mistral AI takes an absolute learning rate; `learning_rate_multiplier` was not sent.');
    if (hp.batch_size !== 'auto') warnings.push('Mistral AI has no batch size setting; `batch_size` was not sent.');
    if (spec.integrations?.length) warnings.push('Mistral AI configures Weights & Biases with an API key; `integrations` were not sent.');
    warnings.push(`Mistral AI does not take a seed; the job's seed ${spec.seed} is recorded but not sent.`);
    return { request: post(`${e.base}/fine_tuning/jobs`, body, e), warnings };
  },
  retrieveJob: (e, id) => get(`${e.base}/fine_tuning/jobs/${seg(id)}`, e),
  cancelJob: (e, id) => post(`${e.base}/fine_tuning/jobs/${seg(id)}/cancel`, undefined, e),
  parseJob(body) {
    const j = obj(body);
    const providerStatus = str(j.status) ?? 'unknown';
    const status = STATUS[providerStatus.toUpperCase()] ?? 'running';
    const hp = obj(j.hyperparameters);
    const failedEvent = arr(j.events)
      .map(obj)
      .filter((e) => /fail|error/i.test(String(obj(e.data).status ?? e.name ?? '')))
      .at(-1);
    return {
      id: str(j.id) ?? '',
      status,
      providerStatus,
      fineTunedModel: str(j.fine_tuned_model) ?? null,
      trainedTokens: int(j.trained_tokens),
      resultFiles: [],
      estimatedFinish: null,
      hyperparameters: typeof hp.epochs === 'number' ? { n_epochs: hp.epochs } : undefined,
      ...(status === 'failed'
        ? {
            error: failure('Mistral AI', {
              code: providerStatus === 'FAILED_VALIDATION' ? 'invalid_training_file' : 'provider_job_failed',
              message: str(obj(failedEvent?.data).error) ?? str(obj(failedEvent?.data).message),
            }),
          }
        : {}),
    };
  },
  parseEvents(body): ProviderEvent[] {
    return arr(obj(body).events).flatMap((raw) => {
      const e = obj(raw);
      const createdAt = unixSeconds(e.created_at);
      if (createdAt === null) return [];
      const data = obj(e.data);
      const name = str(e.name) ?? 'event';
      const status = str(data.status);
      const isError = /fail|error/i.test(status ?? '');
      return [
        {
          id: derivedEventId(e.created_at, name, data),
          createdAt,
          level: isError ? ('error' as const) : ('info' as const),
          message: status ? `Mistral AI job status: ${status}` : name,
          type: 'message' as const,
          data: Object.keys(data).length ? data : null,
        },
      ];
    });
  },
};
