/**
 * Native batches on AWS Bedrock: a model invocation job. The lines go to the provider's batch
 * bucket (`aws_batch_s3_uri`) as `{recordId, modelInput}` records at
 * `{prefix}{batch id}/input.jsonl`; CreateModelInvocationJob (with the batch id as its
 * idempotency token, so a submit that runs again gets the same job) runs them as the
 * service role `aws_batch_role_arn`; Bedrock writes `{prefix}{batch id}/output/{job id}/input.jsonl.out`,
 * read back record by record and translated by the live path's translators.
 */
import { callProvider, callProviderOk, jsonLines, streamProvider } from './http';
import { NativeBatchRejected } from './errors';
import { errorAnswer, okAnswer, prepared, translateContext } from './cloud-lines';
import { lineKey, lineOfKey } from './types';
import type { NativeBatchAdapter, NativeBatchContext, NativeJobRef, NativeJobState, NativeLineResult, SubmitLine } from './types';
import {
  bedrockBatchAnswer,
  bedrockBatchRecord,
  bedrockJobName,
  bedrockRecordError,
  createJobRequest,
  getJobRequest,
  outputKey,
  parseJob,
  stopJobRequest,
  type BedrockOutputRecord,
} from '../../providers/bedrock/batch';
import { batchLocation, getObject, putObject, s3Sign, s3Uri } from '../../providers/bedrock/s3';

const NAME = 'Bedrock batch inference';

/** The same context, its requests signed for S3 instead of Bedrock. */
const s3Context = (ctx: NativeBatchContext): NativeBatchContext => ({
  ...ctx,
  provider: { ...ctx.provider, adapter: { ...ctx.provider.adapter, sign: s3Sign } },
});

/** A missing or malformed setting (a 400 of the translators) as the permanent refusal it is. */
function settings<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    const e = err as { message?: string; code?: string };
    throw new NativeBatchRejected(`${NAME}: ${e.message ?? String(err)}`, e.code ?? 'invalid_provider_settings');
  }
}

async function submit(ctx: NativeBatchContext, lines: AsyncIterable<SubmitLine>): Promise<NativeJobRef> {
  const { target } = ctx.provider;
  const { bucket, prefix } = settings(() => batchLocation(target));
  const records: string[] = [];
  let model = '';
  for await (const l of lines) {
    model ||= l.model;
    records.push(JSON.stringify(l.payload));
  }
  const folder = `${prefix}${ctx.batchId}/`;
  const inputKey = `${folder}input.jsonl`;
  const outputPrefix = `${folder}output/`;
  const put = settings(() => putObject(target, bucket, inputKey, Buffer.from(`${records.join('\n')}\n`), 'application/jsonl'));
  await callProviderOk(s3Context(ctx), `${NAME} (S3 upload)`, put);
  const create = settings(() =>
    createJobRequest(target, {
      jobName: bedrockJobName(ctx.batchId),
      modelId: model,
      inputUri: s3Uri(bucket, inputKey),
      outputUri: s3Uri(bucket, outputPrefix),
      clientRequestToken: ctx.batchId,
    }),
  );
  const job = parseJob(await callProviderOk(ctx, NAME, create));
  if (!job.jobArn) throw new NativeBatchRejected(`${NAME} accepted the job but named no job ARN.`, 'invalid_provider_response', 502);
  return { id: job.jobArn, data: { bucket, inputKey, outputPrefix, model } };
}

async function poll(ctx: NativeBatchContext, job: NativeJobRef): Promise<NativeJobState> {
  const state = parseJob(await callProviderOk(ctx, NAME, getJobRequest(ctx.provider.target, job.id)));
  const status = state.phase === 'validating' ? 'in_progress' : state.phase;
  return {
    status,
    providerStatus: state.status,
    ...(state.counts ? { counts: state.counts } : {}),
    ...(status === 'failed'
      ? { errors: [{ code: 'provider_job_failed', message: `${NAME} job ${state.status}: ${state.message ?? 'no reason given'}` }] }
      : {}),
  };
}

async function cancel(ctx: NativeBatchContext, job: NativeJobRef): Promise<void> {
  const res = await callProvider(ctx, NAME, stopJobRequest(ctx.provider.target, job.id));
  if (res.status >= 200 && res.status < 300) return;
  // Bedrock refuses to stop a job that has ended (or is stopping): that is no error here.
  const now = await poll(ctx, job);
  if (now.status === 'in_progress')
    throw new NativeBatchRejected(`${NAME} would not stop job ${job.id} (HTTP ${res.status}).`, 'provider_cancel_refused', res.status);
}

async function* results(ctx: NativeBatchContext, job: NativeJobRef): AsyncIterable<NativeLineResult> {
  const { bucket = '', outputPrefix = '', inputKey = '', model = '' } = job.data ?? {};
  let body: Awaited<ReturnType<typeof streamProvider>>;
  try {
    body = await streamProvider(s3Context(ctx), `${NAME} (S3 results)`, getObject(ctx.provider.target, bucket, outputKey(outputPrefix, job.id, inputKey)));
  } catch (err) {
    // A job that ended before it ran a record writes no records file.
    if (err instanceof NativeBatchRejected && err.status === 404) return;
    throw err;
  }
  for await (const value of jsonLines(body)) {
    const record = (value ?? {}) as BedrockOutputRecord;
    const line = lineOfKey(record.recordId ?? '');
    if (line === undefined) continue;
    const error = bedrockRecordError(record);
    if (error) {
      yield errorAnswer(line, error.status, error.message, 'provider_record_error');
      continue;
    }
    const answer = bedrockBatchAnswer(
      ctx.endpoint,
      model,
      record.modelOutput,
      translateContext(model, ctx.endpoint === '/v1/embeddings' ? 'emb-' : 'chatcmpl-'),
    );
    yield okAnswer(line, answer, model);
  }
}

export const bedrockBatch: NativeBatchAdapter = {
  name: NAME,
  providers: ['bedrock'],
  endpoints: ['/v1/chat/completions', '/v1/embeddings'],
  batchDiscount: 0.5,
  oneModelPerJob: true,
  prepare: (ctx, line) => {
    const model = String(line.body.model);
    return prepared(line.line, model, () => bedrockBatchRecord(ctx.endpoint, lineKey(line.line), line.body));
  },
  submit,
  poll,
  cancel,
  results,
};
