/**
 * Vertex AI batch prediction for Gemini: the input lines (`{"key", "request":
 * GenerateContentRequest}`, the request as the live path builds it, its line also in
 * `labels.gateway_line`), the batchPredictionJobs requests (create, get, `:cancel`), and
 * each output line (`{request, response, status}`) read back as the OpenAI chat completion
 * the live path would give. Vertex may write the output lines in any order: a line is
 * matched to its request by `key`, else by the label Vertex echoes in `request`.
 */
import { badRequest } from '../../shared/errors';
import { SETTING } from '../../shared/provider-table';
import { fromGeminiResponse, toGeminiRequest } from '../_shared/gemini/format';
import { jsonGet, jsonPost } from '../_shared/openai-shape';
import type { ChatRequest, ProviderTarget, TranslateContext, UpstreamRequest } from '../types';
import { authHeaders, locationUrl, parseVertexModel } from './index';

/** One input line for the file line `line`. Only chat completions translate to Gemini batch requests. */
export function vertexBatchLine(endpoint: string, line: number, body: Record<string, unknown>): { key: string; request: Record<string, unknown> } {
  if (endpoint !== '/v1/chat/completions') {
    throw badRequest(`Native Vertex AI batches run /v1/chat/completions only, not ${endpoint}.`, 'endpoint', 'unsupported_endpoint');
  }
  const request = toGeminiRequest({ ...body, stream: false } as unknown as ChatRequest);
  return { key: String(line), request: { ...request, labels: { gateway_line: String(line) } } };
}

/** An output line as Vertex writes it. */
export interface VertexOutputLine {
  key?: unknown;
  request?: { labels?: Record<string, unknown> };
  response?: unknown;
  /** Empty when the request succeeded; else the error, as a message or a google.rpc.Status. */
  status?: unknown;
}

/** The file line an output line answers, or undefined when it carries neither key nor label. */
export function lineOfOutput(out: VertexOutputLine): number | undefined {
  const raw = out.key ?? out.request?.labels?.gateway_line;
  const n = typeof raw === 'string' && /^\d{1,9}$/.test(raw) ? Number(raw) : typeof raw === 'number' ? raw : undefined;
  return n !== undefined && Number.isInteger(n) && n > 0 ? n : undefined;
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
  message?: string;
  /** `gs://…/prediction-model-…`: where the predictions files are, once the job has written them. */
  outputDirectory?: string;
}

export function parseJob(body: unknown): VertexJob {
  const job = (body ?? {}) as { name?: string; state?: string; error?: { message?: string }; outputInfo?: { gcsOutputDirectory?: string } };
  const state = job.state ?? 'JOB_STATE_PENDING';
  return {
    name: job.name ?? '',
    state,
    phase: PHASES[state] ?? 'in_progress',
    ...(job.error?.message ? { message: job.error.message } : {}),
    ...(job.outputInfo?.gcsOutputDirectory ? { outputDirectory: job.outputInfo.gcsOutputDirectory } : {}),
  };
}

/** Vertex's display names are free text up to 128 characters. */
export const vertexJobName = (batchId: string): string => `gateway ${batchId}`.slice(0, 128);

/** The predictions files of an output directory (`predictions.jsonl`, or numbered ones). */
export const isPredictionsFile = (name: string): boolean => /(?:^|\/)predictions[^/]*\.jsonl$/.test(name);
