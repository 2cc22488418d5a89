/**
 * Native batches on Vertex AI: a Gemini batch prediction job. The lines go to the provider's
 * Cloud Storage location (`vertex_batch_gcs_uri`) as `{"key", "request"}` lines at
 * `{prefix}{batch id}/input.jsonl`; the job (display name `gateway {batch id}`, found again
 * by it when a create's answer was lost) writes its predictions under
 * `{prefix}{batch id}/output/`, read back file by file, line by line, and translated by
 * the live path's Gemini translator.
 */
import { callProviderOk, jsonLines, streamProvider } from './http';
import { NativeBatchRejected } from './errors';
import { errorAnswer, okAnswer, prepared, translateContext } from './cloud-lines';
import { lineKey, lineOfKey } from './types';
import type { NativeBatchAdapter, NativeBatchContext, NativeJobRef, NativeJobState, NativeLineResult, SubmitLine } from './types';
import {
  cancelJobRequest,
  createJobRequest,
  findJobsRequest,
  getJobRequest,
  isPredictionsFile,
  labelledLine,
  parseJob,
  parseJobList,
  vertexBatchAnswer,
  vertexBatchRequest,
  vertexJobName,
  vertexLineError,
  type VertexJob,
  type VertexOutputLine,
} from '../../providers/vertex-ai/batch';
import { batchGcsLocation, downloadObject, gcsUri, listObjects, parseGcsUri, parseObjectList, uploadObject } from '../../providers/vertex-ai/gcs';

const NAME = 'Vertex AI batch prediction';

function settings<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    const e = err as { message?: string; code?: string };
    throw new NativeBatchRejected(`${NAME}: ${e.message ?? String(err)}`, e.code ?? 'invalid_provider_settings');
  }
}

const refOf = (job: VertexJob, model: string): NativeJobRef => ({ id: job.name, data: { model } });

async function submit(ctx: NativeBatchContext, lines: AsyncIterable<SubmitLine>): Promise<NativeJobRef> {
  const { target } = ctx.provider;
  const { bucket, prefix } = settings(() => batchGcsLocation(target));
  const out: string[] = [];
  let model = '';
  for await (const l of lines) {
    model ||= l.model;
    out.push(JSON.stringify(l.payload));
  }
  const folder = `${prefix}${ctx.batchId}/`;
  const upload = settings(() => uploadObject(target, bucket, `${folder}input.jsonl`, Buffer.from(`${out.join('\n')}\n`), 'application/jsonl'));
  await callProviderOk(ctx, `${NAME} (Cloud Storage upload)`, upload);
  const create = settings(() =>
    createJobRequest(target, {
      displayName: vertexJobName(ctx.batchId),
      model,
      inputUri: gcsUri(bucket, `${folder}input.jsonl`),
      outputUriPrefix: gcsUri(bucket, `${folder}output`),
    }),
  );
  const job = parseJob(await callProviderOk(ctx, NAME, create));
  if (!job.name) throw new NativeBatchRejected(`${NAME} accepted the job but named none.`, 'invalid_provider_response', 502);
  return refOf(job, model);
}

/** Vertex has no idempotency token: a submit that runs again first looks for the job by its display name. */
async function findJob(ctx: NativeBatchContext): Promise<NativeJobRef | undefined> {
  const list = parseJobList(
    await callProviderOk(
      ctx,
      NAME,
      settings(() => findJobsRequest(ctx.provider.target, vertexJobName(ctx.batchId))),
    ),
  );
  const job = list.find((j) => j.name);
  return job ? refOf(job, job.model ?? '') : undefined;
}

async function readJob(ctx: NativeBatchContext, job: NativeJobRef): Promise<VertexJob> {
  return parseJob(
    await callProviderOk(
      ctx,
      NAME,
      settings(() => getJobRequest(ctx.provider.target, job.id)),
    ),
  );
}

async function poll(ctx: NativeBatchContext, job: NativeJobRef): Promise<NativeJobState> {
  const state = await readJob(ctx, job);
  const status = state.phase === 'validating' ? 'in_progress' : state.phase;
  return {
    status,
    providerStatus: state.state,
    ...(state.counts ? { counts: state.counts } : {}),
    ...(status === 'failed' ? { errors: [{ code: 'provider_job_failed', message: `${NAME} job ${state.state}: ${state.message ?? 'no reason given'}` }] } : {}),
  };
}

async function cancel(ctx: NativeBatchContext, job: NativeJobRef): Promise<void> {
  try {
    await callProviderOk(
      ctx,
      NAME,
      settings(() => cancelJobRequest(ctx.provider.target, job.id)),
    );
  } catch (err) {
    // Vertex refuses (400 FAILED_PRECONDITION) to cancel a job that has ended: no error here.
    if (!(err instanceof NativeBatchRejected)) throw err;
    if ((await poll(ctx, job)).status === 'in_progress') throw err;
  }
}

/** The file line of an output line: the key the gateway wrote, else the label Vertex echoes. */
const lineOf = (out: VertexOutputLine): number | undefined => (typeof out.key === 'string' ? lineOfKey(out.key) : undefined) ?? labelledLine(out);

async function* results(ctx: NativeBatchContext, job: NativeJobRef): AsyncIterable<NativeLineResult> {
  const { target } = ctx.provider;
  const model = job.data?.model ?? '';
  const directory = (await readJob(ctx, job)).outputDirectory;
  const where = directory ? parseGcsUri(directory) : undefined;
  if (!where) return; // the job wrote no output (it failed or was cancelled before it ran)
  const prefix = where.name.endsWith('/') ? where.name : `${where.name}/`;
  const seen = new Set<number>();
  let pageToken: string | undefined;
  do {
    const page = parseObjectList(await callProviderOk(ctx, `${NAME} (Cloud Storage list)`, listObjects(target, where.bucket, prefix, pageToken)));
    for (const name of page.names.filter(isPredictionsFile).sort()) {
      const body = await streamProvider(ctx, `${NAME} (Cloud Storage read)`, downloadObject(target, where.bucket, name));
      for await (const value of jsonLines(body)) {
        const out = (value ?? {}) as VertexOutputLine;
        const line = lineOf(out);
        if (line === undefined || seen.has(line)) continue;
        seen.add(line);
        const error = vertexLineError(out);
        if (error) yield errorAnswer(line, error.status, error.message, 'provider_record_error');
        else yield okAnswer(line, vertexBatchAnswer(out.response, translateContext(model, 'chatcmpl-')), model);
      }
    }
    pageToken = page.nextPageToken;
  } while (pageToken);
}

export const vertexBatch: NativeBatchAdapter = {
  name: NAME,
  providers: ['vertex-ai'],
  endpoints: ['/v1/chat/completions'],
  batchDiscount: 0.5,
  oneModelPerJob: true,
  prepare: (ctx, line) => {
    const model = String(line.body.model);
    return prepared(line.line, model, () => ({ key: lineKey(line.line), request: vertexBatchRequest(ctx.endpoint, line.line, line.body) }));
  },
  submit,
  findJob,
  poll,
  cancel,
  results,
};
