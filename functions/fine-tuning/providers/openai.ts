/**
 * OpenAI's fine-tuning API and Azure OpenAI's copy of it. One factory; Azure's differences are options:
 * - Azure statuses also include `pending` / `notRunning` (-> queued) and `canceled`;
 * - Azure's GA api-version takes supervised hyperparameters at the top level
 *   (`hyperparameters`), `method` only for DPO; it has no `metadata` or W&B integration;
 * - Azure files report `status: error` when processing failed (not trainable).
 */
import type { JobStatus } from '../types';
import { arr, failure, get, hyperparametersOf, int, level, obj, post, postForm, seg, str, unixSeconds } from './shape';
import type { Endpoint, FineTuningAdapter, JobSpec, ProviderEvent, ProviderJobState } from './types';

const STATUS: Record<string, JobStatus> = {
  validating_files: 'validating_files',
  queued: 'queued',
  pending: 'queued',
  notrunning: 'queued',
  running: 'running',
  paused: 'running',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
  canceled: 'cancelled',
};

export function mapOpenAIStatus(status: string): JobStatus {
  return STATUS[status.toLowerCase()] ?? 'running';
}

interface OpenAIStyleOptions {
  kind: 'openai' | 'azure-openai';
  name: string;
  /** Appends the query (Azure: `?api-version=...`). */
  query(e: Endpoint): string;
  /** Azure GA: supervised hyperparameters at the top level; no metadata, no integrations. */
  azure: boolean;
}

function createBody(spec: JobSpec, azure: boolean): { body: Record<string, unknown>; warnings: string[] } {
  const warnings: string[] = [];
  const body: Record<string, unknown> = { model: spec.model, training_file: spec.trainingFile, seed: spec.seed };
  if (spec.validationFile) body.validation_file = spec.validationFile;
  if (spec.suffix) body.suffix = spec.suffix;
  if (azure && spec.method.type === 'supervised') body.hyperparameters = spec.method.supervised.hyperparameters;
  else body.method = spec.method;
  if (azure) {
    if (spec.integrations?.length) warnings.push('Azure OpenAI has no Weights & Biases integration; `integrations` were not sent.');
  } else {
    if (spec.integrations?.length) body.integrations = spec.integrations;
    body.metadata = { gateway_job_id: spec.gatewayJobId };
  }
  return { body, warnings };
}

export function parseOpenAIJob(name: string, body: unknown): ProviderJobState {
  const j = obj(body);
  const providerStatus = str(j.status) ?? 'unknown';
  const status = mapOpenAIStatus(providerStatus);
  const method = obj(j.method);
  const methodType = str(method.type);
  const state: ProviderJobState = {
    id: str(j.id) ?? '',
    status,
    providerStatus,
    fineTunedModel: str(j.fine_tuned_model) ?? null,
    trainedTokens: int(j.trained_tokens),
    resultFiles: arr(j.result_files).filter((f): f is string => typeof f === 'string'),
    estimatedFinish: unixSeconds(j.estimated_finish),
    hyperparameters: hyperparametersOf(j.hyperparameters) ?? (methodType ? hyperparametersOf(obj(method[methodType]).hyperparameters) : undefined),
  };
  if (status === 'failed') state.error = failure(name, j.error);
  return state;
}

export function parseOpenAIEvents(body: unknown): ProviderEvent[] {
  return arr(obj(body).data).flatMap((raw) => {
    const e = obj(raw);
    const id = str(e.id);
    const createdAt = unixSeconds(e.created_at);
    if (!id || createdAt === null) return [];
    const data = e.data && typeof e.data === 'object' && !Array.isArray(e.data) ? (e.data as Record<string, unknown>) : null;
    return [
      { id, createdAt, level: level(e.level), message: str(e.message) ?? '', type: e.type === 'metrics' ? ('metrics' as const) : ('message' as const), data },
    ];
  });
}

export function openAIStyleAdapter(o: OpenAIStyleOptions): FineTuningAdapter {
  const jobs = (e: Endpoint, suffix = '') => `${e.base}/fine_tuning/jobs${suffix}${o.query(e)}`;
  return {
    kind: o.kind,
    name: o.name,
    methods: ['supervised', 'dpo'],
    retrieveFile: (e, fileId) => get(`${e.base}/files/${seg(fileId)}${o.query(e)}`, e),
    uploadFile: (e, file) => postForm(`${e.base}/files${o.query(e)}`, { purpose: 'fine-tune' }, { field: 'file', ...file }, e),
    parseFile(body) {
      const f = obj(body);
      if (o.azure && f.status === 'error')
        return { usable: false, reason: str(obj(f.status_details).message) ?? str(f.status_details) ?? 'the file failed processing at Azure OpenAI' };
      return { usable: true };
    },
    createJob(e, spec) {
      const { body, warnings } = createBody(spec, o.azure);
      return { request: post(jobs(e), body, e), warnings };
    },
    retrieveJob: (e, id) => get(jobs(e, `/${seg(id)}`), e),
    // Azure keeps no metadata, so only OpenAI can find a job by the gateway's id.
    ...(o.azure
      ? {}
      : {
          findJobs: (e: Endpoint, gatewayJobId: string) => get(`${jobs(e)}?metadata[gateway_job_id]=${encodeURIComponent(gatewayJobId)}&limit=10`, e),
          parseJobList: (body: unknown) => arr(obj(body).data).map((j) => parseOpenAIJob(o.name, j)),
        }),
    cancelJob: (e, id) => post(jobs(e, `/${seg(id)}/cancel`), undefined, e),
    listEvents: (e, id) => get(`${e.base}/fine_tuning/jobs/${seg(id)}/events${o.query(e) ? `${o.query(e)}&` : '?'}limit=100`, e),
    parseJob: (body) => parseOpenAIJob(o.name, body),
    parseEvents: parseOpenAIEvents,
  };
}

export const openaiFineTuning = openAIStyleAdapter({ kind: 'openai', name: 'OpenAI', query: () => '', azure: false });

/** Azure's api-version for the fine-tuning routes when the managed provider sets none. */
export const AZURE_FINE_TUNING_API_VERSION = '2024-10-21';

export const azureOpenAIFineTuning = openAIStyleAdapter({
  kind: 'azure-openai',
  name: 'Azure OpenAI',
  query: (e) => `?api-version=${encodeURIComponent(e.target.azure?.apiVersion?.trim() || AZURE_FINE_TUNING_API_VERSION)}`,
  azure: true,
});
