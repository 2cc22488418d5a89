/**
 * Together AI fine-tuning (`https://api.together.xyz/v1/fine-tunes`), mapped onto the OpenAI
 * job model:
 * - create body: `n_epochs`, `batch_size`, `suffix`, `validation_file`,
 *   `training_method: {method: "sft" | "dpo", dpo_beta}`; Together takes an absolute
 *   `learning_rate`, so `learning_rate_multiplier` is not sent (warned), nor `seed` or W&B
 *   `integrations` (Together wants a W&B API key instead);
 * - statuses: pending/queued -> queued; running/compressing/uploading/cancel_requested ->
 *   running; completed -> succeeded; error/user_error -> failed; cancelled -> cancelled;
 * - `output_name` (or `model_output_name`) is the fine-tuned model; `token_count` the
 *   trained tokens; events come from `/fine-tunes/{id}/events` with ISO timestamps and no
 *   ids (ids are derived from their content).
 */
import type { JobStatus } from '../types';
import { arr, derivedEventId, failure, get, int, level, obj, post, postForm, seg, str, unixSeconds } from './shape';
import type { FineTuningAdapter, ProviderEvent } from './types';

const STATUS: Record<string, JobStatus> = {
  pending: 'queued',
  queued: 'queued',
  running: 'running',
  compressing: 'running',
  uploading: 'running',
  cancel_requested: 'running',
  completed: 'succeeded',
  error: 'failed',
  user_error: 'failed',
  cancelled: 'cancelled',
};

function lastError(events: unknown): string | undefined {
  const errors = arr(events)
    .map(obj)
    .filter((e) => level(e.level) === 'error');
  return str(errors.at(-1)?.message);
}

export const togetherFineTuning: FineTuningAdapter = {
  kind: 'together-ai',
  name: 'Together AI',
  methods: ['supervised', 'dpo'],
  retrieveFile: (e, fileId) => get(`${e.base}/files/${seg(fileId)}`, e),
  // Together's upload route takes the file's name as a field of its own.
  uploadFile: (e, file) =>
    postForm(`${e.base}/files/upload`, { purpose: 'fine-tune', file_name: file.filename, file_type: 'jsonl' }, { field: 'file', ...file }, e),
  createJob(e, spec) {
    const warnings: string[] = [];
    const hp = spec.method.type === 'supervised' ? spec.method.supervised.hyperparameters : spec.method.dpo.hyperparameters;
    const body: Record<string, unknown> = { model: spec.model, training_file: spec.trainingFile };
    if (spec.validationFile) body.validation_file = spec.validationFile;
    if (spec.suffix) body.suffix = spec.suffix;
    if (hp.n_epochs !== 'auto') body.n_epochs = hp.n_epochs;
    if (hp.batch_size !== 'auto') body.batch_size = hp.batch_size;
    if (hp.learning_rate_multiplier !== 'auto')
      warnings.push('Together AI takes an absolute learning rate; `learning_rate_multiplier` was not sent (the provider default applies).');
    if (spec.method.type === 'dpo') {
      const beta = spec.method.dpo.hyperparameters.beta;
      body.training_method = { method: 'dpo', ...(beta !== 'auto' ? { dpo_beta: beta } : {}) };
    } else {
      body.training_method = { method: 'sft' };
    }
    if (spec.integrations?.length) warnings.push('Together AI configures Weights & Biases with an API key, not integrations; `integrations` were not sent.');
    warnings.push(`Together AI does not take a seed; the job's seed ${spec.seed} is recorded but not sent.`);
    return { request: post(`${e.base}/fine-tunes`, body, e), warnings };
  },
  retrieveJob: (e, id) => get(`${e.base}/fine-tunes/${seg(id)}`, e),
  cancelJob: (e, id) => post(`${e.base}/fine-tunes/${seg(id)}/cancel`, undefined, e),
  listEvents: (e, id) => get(`${e.base}/fine-tunes/${seg(id)}/events`, e),
  parseJob(body) {
    const j = obj(body);
    const providerStatus = str(j.status) ?? 'unknown';
    const status = STATUS[providerStatus.toLowerCase()] ?? 'running';
    return {
      id: str(j.id) ?? '',
      status,
      providerStatus,
      fineTunedModel: status === 'succeeded' ? (str(j.output_name) ?? str(j.model_output_name) ?? null) : null,
      trainedTokens: int(j.token_count),
      resultFiles: [],
      estimatedFinish: null,
      hyperparameters: {
        ...(typeof j.n_epochs === 'number' ? { n_epochs: j.n_epochs } : {}),
        ...(typeof j.batch_size === 'number' ? { batch_size: j.batch_size } : {}),
      },
      ...(status === 'failed' ? { error: failure('Together AI', j.error, lastError(j.events)) } : {}),
    };
  },
  parseEvents(body): ProviderEvent[] {
    return arr(obj(body).data).flatMap((raw) => {
      const e = obj(raw);
      const createdAt = unixSeconds(e.created_at);
      if (createdAt === null) return [];
      const message = str(e.message) ?? str(e.type) ?? '';
      return [
        {
          id: str(e.id) ?? derivedEventId(e.created_at, e.type, message),
          createdAt,
          level: level(e.level),
          message,
          type: 'message' as const,
          data: e.type ? { type: e.type } : null,
        },
      ];
    });
  },
};
