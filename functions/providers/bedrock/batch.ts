/**
 * Bedrock batch inference (model invocation jobs): the records of the input file, the
 * control-plane requests (CreateModelInvocationJob, GetModelInvocationJob,
 * StopModelInvocationJob on `bedrock.{region}.amazonaws.com`), and each output record read
 * back as the OpenAI answer the live path would give.
 *
 * A record is `{recordId, modelInput}`, the model's own InvokeModel body: Anthropic Claude
 * takes the Messages body (`anthropic_version: bedrock-2023-05-31`), Amazon Nova its
 * `messages-v1` body (Converse-shaped), Titan and Cohere embeddings their embeddings bodies.
 * Bedrock writes `{recordId, modelInput, modelOutput}` (or `error`) to
 * `{output}/{jobId}/{input file name}.out`.
 */
import { badRequest } from '../../shared/errors';
import { SETTING } from '../../shared/provider-table';
import { anthropic, anthropicBody } from '../anthropic';
import { requireSetting, stringInputs } from '../_shared/cloud-common';
import { jsonGet } from '../_shared/openai-shape';
import type { ChatRequest, EmbeddingsRequest, ProviderTarget, TranslateContext, UpstreamRequest } from '../types';
import { fromConverseResponse, toConverseRequest } from './chat';
import { bedrockAuthHeaders, bedrockPost, controlRoot, foundationModelId, validModelId } from './common';
import { bedrockEmbeddings, payloadFor } from './embeddings';

export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

/** The OpenAI endpoints a Bedrock batch record can be built for. */
export type BedrockBatchEndpoint = '/v1/chat/completions' | '/v1/embeddings';

type Family = 'anthropic' | 'nova' | 'embeddings';

function familyOf(endpoint: string, model: string): Family {
  const id = foundationModelId(model);
  if (endpoint === '/v1/embeddings') {
    if (/^(?:amazon\.titan-embed|cohere\.embed)/.test(id)) return 'embeddings';
  } else if (endpoint === '/v1/chat/completions') {
    if (id.startsWith('anthropic.claude')) return 'anthropic';
    if (id.startsWith('amazon.nova')) return 'nova';
  }
  throw badRequest(
    `Native Bedrock batches take Anthropic Claude and Amazon Nova chat models and Titan or Cohere embeddings models on ${endpoint}, not '${model.slice(0, 120)}'.`,
    'body.model',
    'unsupported_model',
  );
}

/** Converse's inference settings as Nova's InvokeModel names them. */
function novaInput(body: ChatRequest): Record<string, unknown> {
  const { messages, system, inferenceConfig, toolConfig } = toConverseRequest(body) as Record<string, Record<string, unknown> | undefined>;
  const inference = inferenceConfig
    ? Object.fromEntries(
        Object.entries({
          max_new_tokens: inferenceConfig.maxTokens,
          temperature: inferenceConfig.temperature,
          top_p: inferenceConfig.topP,
          stopSequences: inferenceConfig.stopSequences,
        }).filter(([, v]) => v !== undefined),
      )
    : undefined;
  return {
    schemaVersion: 'messages-v1',
    messages,
    ...(system ? { system } : {}),
    ...(inference && Object.keys(inference).length ? { inferenceConfig: inference } : {}),
    ...(toolConfig ? { toolConfig } : {}),
  };
}

/**
 * One input record. `body` is the line's OpenAI request body; a body Bedrock cannot take
 * (another model family, a part it has no block for) is a 400 naming the field.
 */
export function bedrockBatchRecord(
  endpoint: string,
  recordId: string,
  body: Record<string, unknown>,
): { recordId: string; modelInput: Record<string, unknown> } {
  const model = String(body.model ?? '');
  const family = familyOf(endpoint, model);
  if (family === 'embeddings') {
    const request = body as unknown as EmbeddingsRequest;
    return { recordId, modelInput: payloadFor(model, stringInputs(request.input, 'Bedrock'), body) };
  }
  const chat = { ...body, stream: false } as unknown as ChatRequest;
  if (family === 'nova') return { recordId, modelInput: novaInput(chat) };
  const { model: _model, stream: _stream, ...messages } = anthropicBody(chat);
  return { recordId, modelInput: { anthropic_version: BEDROCK_ANTHROPIC_VERSION, ...messages } };
}

/** One output record's `modelOutput` -> the OpenAI answer body of its endpoint. */
export function bedrockBatchAnswer(endpoint: string, model: string, modelOutput: unknown, ctx: TranslateContext): Record<string, unknown> {
  const family = familyOf(endpoint, model);
  if (family === 'embeddings') return bedrockEmbeddings.response!(modelOutput, ctx) as unknown as Record<string, unknown>;
  if (family === 'nova') return fromConverseResponse(modelOutput, ctx) as unknown as Record<string, unknown>;
  return anthropic.chat!.response(modelOutput, ctx) as unknown as Record<string, unknown>;
}

/** An output record as Bedrock writes it. */
export interface BedrockOutputRecord {
  recordId?: string;
  modelInput?: unknown;
  modelOutput?: unknown;
  error?: { errorCode?: number | string; errorMessage?: string } | string;
}

/** A record's error as an HTTP status and message (Bedrock gives the InvokeModel status code when it has one). */
export function bedrockRecordError(record: BedrockOutputRecord): { status: number; message: string } | undefined {
  const { error } = record;
  if (error === undefined || error === null)
    return record.modelOutput === undefined ? { status: 500, message: 'Bedrock wrote no output for this record.' } : undefined;
  if (typeof error === 'string') return { status: 500, message: error };
  const code = Number(error.errorCode);
  return { status: Number.isInteger(code) && code >= 400 && code < 600 ? code : 500, message: error.errorMessage ?? 'Bedrock could not run this record.' };
}

/** Bedrock's job names: letters, digits, `+-.` after the first character, at most 63. */
export const bedrockJobName = (batchId: string): string => `gateway-${batchId.replace(/[^A-Za-z0-9]/g, '-')}`.slice(0, 63);

export interface CreateJobInput {
  jobName: string;
  modelId: string;
  inputUri: string;
  outputUri: string;
  /** Idempotency token: a create retried after a lost answer does not start a second job. */
  clientRequestToken: string;
}

export const batchRoleArn = (target: ProviderTarget): string =>
  requireSetting(target.aws?.batchRoleArn, SETTING.aws_batch_role_arn, 'service role ARN for Bedrock batches');

export function createJobRequest(target: ProviderTarget, job: CreateJobInput): UpstreamRequest {
  return bedrockPost(
    `${controlRoot(target)}/model-invocation-job`,
    {
      jobName: job.jobName,
      modelId: validModelId(job.modelId),
      roleArn: batchRoleArn(target),
      clientRequestToken: job.clientRequestToken,
      timeoutDurationInHours: 24,
      inputDataConfig: { s3InputDataConfig: { s3Uri: job.inputUri, s3InputFormat: 'JSONL' } },
      outputDataConfig: { s3OutputDataConfig: { s3Uri: job.outputUri } },
    },
    target,
  );
}

/** The job's ARN as the `{jobIdentifier}` path segment. */
const jobSegment = (jobArn: string) => encodeURIComponent(jobArn);

export const getJobRequest = (target: ProviderTarget, jobArn: string): UpstreamRequest =>
  jsonGet(`${controlRoot(target)}/model-invocation-job/${jobSegment(jobArn)}`, bedrockAuthHeaders(target), target);

export const stopJobRequest = (target: ProviderTarget, jobArn: string): UpstreamRequest =>
  bedrockPost(`${controlRoot(target)}/model-invocation-job/${jobSegment(jobArn)}/stop`, {}, target);

/** Where a job stands, in the words of the gateway's batch statuses. */
export type NativeJobPhase = 'validating' | 'in_progress' | 'completed' | 'failed' | 'cancelling' | 'cancelled' | 'expired';

const PHASES: Record<string, NativeJobPhase> = {
  Submitted: 'validating',
  Validating: 'validating',
  Scheduled: 'validating',
  InProgress: 'in_progress',
  Completed: 'completed',
  PartiallyCompleted: 'completed',
  Failed: 'failed',
  Stopping: 'cancelling',
  Stopped: 'cancelled',
  Expired: 'expired',
};

export interface BedrockJob {
  jobArn: string;
  status: string;
  phase: NativeJobPhase;
  message?: string;
  inputUri?: string;
  outputUri?: string;
  /** Records done so far, when Bedrock reports them (`successRecordCount`, `errorRecordCount`). */
  counts?: { completed: number; failed: number };
}

export function parseJob(body: unknown): BedrockJob {
  const job = (body ?? {}) as {
    jobArn?: string;
    status?: string;
    message?: string;
    successRecordCount?: number;
    errorRecordCount?: number;
    inputDataConfig?: { s3InputDataConfig?: { s3Uri?: string } };
    outputDataConfig?: { s3OutputDataConfig?: { s3Uri?: string } };
  };
  const status = job.status ?? 'Submitted';
  return {
    jobArn: job.jobArn ?? '',
    status,
    phase: PHASES[status] ?? 'in_progress',
    ...(job.message ? { message: job.message } : {}),
    ...(job.inputDataConfig?.s3InputDataConfig?.s3Uri ? { inputUri: job.inputDataConfig.s3InputDataConfig.s3Uri } : {}),
    ...(job.outputDataConfig?.s3OutputDataConfig?.s3Uri ? { outputUri: job.outputDataConfig.s3OutputDataConfig.s3Uri } : {}),
    ...(typeof job.successRecordCount === 'number' || typeof job.errorRecordCount === 'number'
      ? { counts: { completed: job.successRecordCount ?? 0, failed: job.errorRecordCount ?? 0 } }
      : {}),
  };
}

/** The job id is the last segment of its ARN (`arn:aws:bedrock:…:model-invocation-job/{id}`). */
export const jobIdOf = (jobArn: string): string => jobArn.slice(jobArn.lastIndexOf('/') + 1);

/** Where Bedrock writes a job's records: `{output}/{jobId}/{input file name}.out`. */
export function outputKey(outputPrefix: string, jobArn: string, inputKey: string): string {
  const base = outputPrefix && !outputPrefix.endsWith('/') ? `${outputPrefix}/` : outputPrefix;
  return `${base}${jobIdOf(jobArn)}/${inputKey.slice(inputKey.lastIndexOf('/') + 1)}.out`;
}
