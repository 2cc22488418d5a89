/**
 * Fireworks AI fine-tuning. Its control plane is not OpenAI-shaped: resources
 * live under `https://api.fireworks.ai/v1/accounts/{account_id}/...`, files are *datasets*
 * and jobs are *supervisedFineTuningJobs*. What the gateway maps:
 * - `training_file` / `validation_file` are dataset resource names
 *   `accounts/{account_id}/datasets/{dataset_id}`; the account id of every call comes from
 *   the training dataset (checked when the job is created: a 400 names the expected form).
 *   A dataset is usable when its `state` is READY.
 * - the base URL: the managed provider's custom host with a trailing `/inference/v1`
 *   replaced by `/v1` (the inference adapter's base), else `https://api.fireworks.ai/v1`.
 * - create: POST `{base}/accounts/{a}/supervisedFineTuningJobs` with `dataset`,
 *   `baseModel` (bare names get `accounts/fireworks/models/`), `evaluationDataset`,
 *   `epochs`, `batchSize`, `displayName` (the suffix, else the gateway job id). Fireworks
 *   takes an absolute `learningRate` and a W&B API key: the multiplier, integrations and
 *   seed are not sent (warned). DPO jobs are a different Fireworks resource: not offered.
 * - the provider job id is the job's resource `name`; retrieve is GET `{base}/{name}`,
 *   cancel POST `{base}/{name}:cancel`.
 * - `state` JOB_STATE_*: CREATING/PENDING/VALIDATING -> queued; RUNNING/WRITING_RESULTS/
 *   EVALUATION -> running; COMPLETED -> succeeded; FAILED/EXPIRED -> failed (with
 *   `status.message`); CANCELLED/DELETING -> cancelled. `outputModel` is the fine-tuned
 *   model. There is no events API: progress (`jobProgress.percent`) becomes metrics events.
 */
import type { JobStatus } from '../types';
import { failure, get, int, obj, post, str, unixSeconds } from './shape';
import type { Endpoint, FineTuningAdapter, JobSpec, ProviderEvent } from './types';

export const FIREWORKS_CONTROL_PLANE = 'https://api.fireworks.ai/v1';
const DATASET = /^accounts\/([a-z0-9][a-z0-9-]{0,62})\/datasets\/([a-z0-9][a-z0-9-]{0,62})$/;
const JOB_NAME = /^accounts\/[a-z0-9][a-z0-9-]{0,62}\/supervisedFineTuningJobs\/[A-Za-z0-9-]{1,128}$/;

const STATE: Record<string, JobStatus> = {
  JOB_STATE_CREATING: 'queued',
  JOB_STATE_PENDING: 'queued',
  JOB_STATE_VALIDATING: 'queued',
  JOB_STATE_RUNNING: 'running',
  JOB_STATE_WRITING_RESULTS: 'running',
  JOB_STATE_EVALUATION: 'running',
  JOB_STATE_CANCELLING: 'running',
  JOB_STATE_COMPLETED: 'succeeded',
  JOB_STATE_FAILED: 'failed',
  JOB_STATE_FAILED_CLEANING_UP: 'failed',
  JOB_STATE_EXPIRED: 'failed',
  JOB_STATE_CANCELLED: 'cancelled',
  JOB_STATE_DELETING: 'cancelled',
  JOB_STATE_DELETING_CLEANING_UP: 'cancelled',
};

/** The control-plane base for an inference base URL (custom host) or the default. */
export function fireworksControlPlane(inferenceBase: string, customHost: string | undefined): string {
  if (!customHost) return FIREWORKS_CONTROL_PLANE;
  return inferenceBase.replace(/\/inference\/v1$/, '/v1');
}

const base = (e: Endpoint) => fireworksControlPlane(e.base, e.target.customHost);
/** Resource names keep their slashes; each segment was checked against DATASET / JOB_NAME. */
const resource = (e: Endpoint, name: string) => `${base(e)}/${name.split('/').map(encodeURIComponent).join('/')}`;

export function fireworksAccount(datasetName: string): string | undefined {
  return DATASET.exec(datasetName)?.[1];
}

function checkSpec(spec: JobSpec): { message: string; param: string } | undefined {
  const account = fireworksAccount(spec.trainingFile);
  if (!account) {
    return {
      message: 'Fireworks AI trains on datasets: `training_file` must be a dataset resource name, `accounts/<account_id>/datasets/<dataset_id>`.',
      param: 'training_file',
    };
  }
  if (spec.validationFile && fireworksAccount(spec.validationFile) !== account) {
    return {
      message: '`validation_file` must be a dataset of the same Fireworks account: `accounts/<account_id>/datasets/<dataset_id>`.',
      param: 'validation_file',
    };
  }
  return undefined;
}

export const fireworksFineTuning: FineTuningAdapter = {
  kind: 'fireworks-ai',
  name: 'Fireworks AI',
  methods: ['supervised'],
  checkSpec,
  retrieveFile(e, fileId) {
    if (!DATASET.test(fileId)) throw new Error(`not a Fireworks dataset name: ${fileId}`);
    return get(resource(e, fileId), e);
  },
  parseFile(body) {
    const state = str(obj(body).state) ?? 'STATE_UNSPECIFIED';
    return state === 'READY' ? { usable: true } : { usable: false, reason: `the dataset is ${state}, not READY` };
  },
  createJob(e, spec) {
    if (spec.method.type !== 'supervised') throw new Error('Fireworks AI fine-tuning is supervised only here');
    const account = fireworksAccount(spec.trainingFile)!;
    const hp = spec.method.supervised.hyperparameters;
    const warnings: string[] = [];
    const body: Record<string, unknown> = {
      dataset: spec.trainingFile,
      baseModel: spec.model.startsWith('accounts/') ? spec.model : `accounts/fireworks/models/${spec.model}`,
      displayName: spec.suffix ?? spec.gatewayJobId,
    };
    if (spec.validationFile) body.evaluationDataset = spec.validationFile;
    if (hp.n_epochs !== 'auto') body.epochs = hp.n_epochs;
    if (hp.batch_size !== 'auto') body.batchSize = hp.batch_size;
    if (hp.learning_rate_multiplier !== 'auto') warnings.push('Fireworks AI takes an absolute learning rate; `learning_rate_multiplier` was not sent.');
    if (spec.integrations?.length) warnings.push('Fireworks AI configures Weights & Biases with an API key (wandbConfig); `integrations` were not sent.');
    warnings.push(`Fireworks AI does not take a seed; the job's seed ${spec.seed} is recorded but not sent.`);
    return { request: post(`${base(e)}/accounts/${encodeURIComponent(account)}/supervisedFineTuningJobs`, body, e), warnings };
  },
  retrieveJob(e, id) {
    if (!JOB_NAME.test(id)) throw new Error(`not a Fireworks job name: ${id}`);
    return get(resource(e, id), e);
  },
  cancelJob(e, id) {
    if (!JOB_NAME.test(id)) throw new Error(`not a Fireworks job name: ${id}`);
    return post(`${resource(e, id)}:cancel`, {}, e);
  },
  parseJob(body) {
    const j = obj(body);
    const providerStatus = str(j.state) ?? 'JOB_STATE_UNSPECIFIED';
    const status = STATE[providerStatus] ?? 'queued';
    const progress = obj(j.jobProgress);
    return {
      id: str(j.name) ?? '',
      status,
      providerStatus,
      fineTunedModel: status === 'succeeded' ? (str(j.outputModel) ?? null) : null,
      trainedTokens: status === 'succeeded' ? int(progress.inputTokens) : null,
      resultFiles: [],
      estimatedFinish: null,
      hyperparameters: {
        ...(typeof j.epochs === 'number' ? { n_epochs: j.epochs } : {}),
        ...(typeof j.batchSize === 'number' ? { batch_size: j.batchSize } : {}),
      },
      ...(status === 'failed'
        ? { error: failure('Fireworks AI', { code: str(obj(j.status).code) ?? 'provider_job_failed', message: str(obj(j.status).message) }) }
        : {}),
    };
  },
  /** No events API: a metrics event per progress percentage seen. */
  parseEvents(body): ProviderEvent[] {
    const j = obj(body);
    const progress = obj(j.jobProgress);
    const percent = int(progress.percent);
    if (percent === null) return [];
    return [
      {
        id: `progress-${percent}`,
        createdAt: unixSeconds(j.updateTime) ?? Math.floor(Date.now() / 1000),
        level: 'info',
        message: `Training progress: ${percent}%`,
        type: 'metrics',
        data: { ...progress },
      },
    ];
  },
};
