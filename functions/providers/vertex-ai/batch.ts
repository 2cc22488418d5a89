/**
 * Vertex AI batch prediction for Gemini: the input lines' requests (GenerateContentRequest
 * as the live path builds it, the file line also in `labels.gateway_line`), the
 * batchPredictionJobs requests (create, get, list by display name, `:cancel`), and each
 * output line (`{request, response, status}`) read back as the OpenAI chat completion the
 * live path would give. Vertex may write the output lines in any order: the adapter matches
 * a line to its request by the `key` it wrote beside `request`, else by the echoed label.
 */
import { badRequest } from '../../shared/errors';
import { SETTING } from '../../shared/provider-table';
import { fromGeminiResponse, toGeminiRequest } from '../_shared/gemini/format';
import { jsonGet, jsonPost } from '../_shared/openai-shape';
import type { ChatRequest, ProviderTarget, TranslateContext, UpstreamRequest } from '../types';
import { authHeaders, locationUrl, parseVertexModel } from './index';

/**
 * The GenerateContentRequest of the file line `line`, the line also in `labels.gateway_line`
 * (Vertex echoes the request in its output). Only chat completions translate.
 */
export function vertexBatchRequest(endpoint: string, line: number, body: Record<string, unknown>): Record<string, unknown> {
  if (endpoint !== '/v1/chat/completions') {
    throw badRequest(`Native Vertex AI batches run /v1/chat/completions only, not ${endpoint}.`, 'endpoint', 'unsupported_endpoint');
  }
  const request = toGeminiRequest({ ...body, stream: false } as unknown as ChatRequest);
  return { ...request, labels: { gateway_line: String(line) } };
}

/** An output line as Vertex writes it. */
export interface VertexOutputLine {
  key?: unknown;
  request?: { labels?: Record<string, unknown> };
  response?: unknown;
  /** Empty when the request succeeded; else the error, as a message or a google.rpc.Status. */
  status?: unknown;
}

/** The file line in an output line's echoed request label, if any. */
export function labelledLine(out: VertexOutputLine): number | undefined {
  const raw = out.request?.labels?.gateway_line;
  return typeof raw === 'string' && /^[1-9]\d{0,8}$/.test(raw) ? Number(raw) : undefined;
}

/** google.rpc.Code -> HTTP status. */
const RPC_STATUS: Record<number, number> = { 3: 400, 5: 404, 7: 403, 8: 429, 9: 400, 11: 400, 13: 500, 14: 503, 16: 401, 4: 504 };

/** The line's error as an HTTP status and message, or undefined when it succeeded. */
export function vertexLineError(out: VertexOutputLine): { status: number; message: string } | undefined {
  const { status } = out;
  if (status && typeof status === 'object') {
    const s = status as { code?: number; message?: string };
    if (!s.code) return out.response ? undefined : { status: 500, message: s.message || 'Vertex AI wrote no response for this request.' };
    return { status: RPC_STATUS[s.code] ?? 500, message: s.message || `Vertex AI answered code ${s.code}.` };
  }
  if (typeof status === 'string' && status.trim()) {
    const code = /\b(\d{3})\b/.exec(status)?.[1];
    const http = code && Number(code) >= 400 && Number(code) < 600 ? Number(code) : 500;
    return { status: http, message: status };
  }
  return out.response ? undefined : { status: 500, message: 'Vertex AI wrote no response for this request.' };
}

export const vertexBatchAnswer = (response: unknown, ctx: TranslateContext): Record<string, unknown> =>
  fromGeminiResponse(response, ctx) as unknown as Record<string, unknown>;

/** The batch job's model: a Google publisher model (`publishers/google/models/{id}`). */
export function batchModel(model: string): { resource: string; project?: string; region?: string } {
  const parsed = parseVertexModel(model);
  if (!parsed.resource.startsWith('publishers/')) {
    throw badRequest('Native Vertex AI batches take Google publisher models (e.g. gemini-2.0-flash), not endpoints.', 'body.model', 'unsupported_model');
  }
  return parsed;
}

export interface CreateVertexJob {
  displayName: string;
  model: string;
  inputUri: string;
  outputUriPrefix: string;
}

export function createJobRequest(target: ProviderTarget, job: CreateVertexJob): UpstreamRequest {
  const model = batchModel(job.model);
  return jsonPost(
    `${locationUrl(target, model)}/batchPredictionJobs`,
    {
      displayName: job.displayName,
      model: model.resource,
      inputConfig: { instancesFormat: 'jsonl', gcsSource: { uris: [job.inputUri] } },
      outputConfig: { predictionsFormat: 'jsonl', gcsDestination: { outputUriPrefix: job.outputUriPrefix } },
    },
    authHeaders(target),
    target,
  );
}

const JOB_NAME = /^projects\/([^/]+)\/locations\/([^/]+)\/batchPredictionJobs\/([0-9A-Za-z_-]{1,128})$/;

/** The job's URL from its resource name (`projects/{p}/locations/{r}/batchPredictionJobs/{id}`). */
function jobUrl(target: ProviderTarget, name: string): string {
  const m = JOB_NAME.exec(name);
  if (!m || !SETTING.vertex_project_id.pattern.test(m[1]!) || !SETTING.vertex_region.pattern.test(m[2]!)) {
    throw badRequest(`Invalid Vertex AI batch prediction job name '${name.slice(0, 160)}'.`, 'name', 'invalid_job');
  }
  return `${locationUrl(target, { project: m[1]!, region: m[2]!, resource: '' })}/batchPredictionJobs/${m[3]}`;
}

export const getJobRequest = (target: ProviderTarget, name: string): UpstreamRequest => jsonGet(jobUrl(target, name), authHeaders(target), target);

/** The jobs of a display name (the gateway names each job after its batch), to find a job whose create answer was lost. */
export function findJobsRequest(target: ProviderTarget, displayName: string): UpstreamRequest {
  const filter = encodeURIComponent(`display_name="${displayName.replace(/["\\]/g, '')}"`);
  return jsonGet(`${locationUrl(target)}/batchPredictionJobs?filter=${filter}`, authHeaders(target), target);
}

export const parseJobList = (body: unknown): VertexJob[] => (((body ?? {}) as { batchPredictionJobs?: unknown[] }).batchPredictionJobs ?? []).map(parseJob);

export const cancelJobRequest = (target: ProviderTarget, name: string): UpstreamRequest =>
  jsonPost(`${jobUrl(target, name)}:cancel`, {}, authHeaders(target), target);

export type VertexJobPhase = 'validating' | 'in_progress' | 'completed' | 'failed' | 'cancelling' | 'cancelled' | 'expired';

const PHASES: Record<string, VertexJobPhase> = {
  JOB_STATE_QUEUED: 'validating',
  JOB_STATE_PENDING: 'validating',
  JOB_STATE_RUNNING: 'in_progress',
  JOB_STATE_UPDATING: 'in_progress',
  JOB_STATE_PAUSED: 'in_progress',
  JOB_STATE_SUCCEEDED: 'completed',
  JOB_STATE_PARTIALLY_SUCCEEDED: 'completed',
  JOB_STATE_FAILED: 'failed',
  JOB_STATE_CANCELLING: 'cancelling',
  JOB_STATE_CANCELLED: 'cancelled',
  JOB_STATE_EXPIRED: 'expired',
};

export interface VertexJob {
  name: string;
  state: string;
  phase: VertexJobPhase;
  /** The model id of the job's `publishers/google/models/{id}`. */
  model?: string;
  message?: string;
  /** `gs://…/prediction-model-…`: where the predictions files are, once the job has written them. */
  outputDirectory?: string;
  counts?: { completed: number; failed: number };
}

/** int64 fields come as strings in Google's JSON. */
const count = (v: unknown): number => (typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : 0);

export function parseJob(body: unknown): VertexJob {
  const job = (body ?? {}) as {
    name?: string;
    state?: string;
    model?: string;
    error?: { message?: string };
    outputInfo?: { gcsOutputDirectory?: string };
    completionStats?: { successfulCount?: unknown; failedCount?: unknown };
  };
  const state = job.state ?? 'JOB_STATE_PENDING';
  return {
    name: job.name ?? '',
    state,
    phase: PHASES[state] ?? 'in_progress',
    ...(job.model ? { model: job.model.slice(job.model.lastIndexOf('/') + 1) } : {}),
    ...(job.error?.message ? { message: job.error.message } : {}),
    ...(job.outputInfo?.gcsOutputDirectory ? { outputDirectory: job.outputInfo.gcsOutputDirectory } : {}),
    ...(job.completionStats ? { counts: { completed: count(job.completionStats.successfulCount), failed: count(job.completionStats.failedCount) } } : {}),
  };
}

/** Vertex's display names are free text up to 128 characters. */
export const vertexJobName = (batchId: string): string => `gateway ${batchId}`.slice(0, 128);

/** The predictions files of an output directory (`predictions.jsonl`, or numbered ones). */
export const isPredictionsFile = (name: string): boolean => /(?:^|\/)predictions[^/]*\.jsonl$/.test(name);
