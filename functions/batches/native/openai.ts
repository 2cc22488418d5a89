/**
 * OpenAI's Batch API as a native batch adapter: the lines (already OpenAI's batch format) are
 * uploaded with purpose `batch` to the provider's Files API, the job is `POST /batches`, polled
 * with `GET /batches/{id}`, and its output and error files are read back as they are (their
 * lines are OpenAI's batch output format: the `id`s and `request_id`s are the provider's).
 */
import { randomUUID } from 'node:crypto';
import type { Usage } from '../../providers/types';
import type { BatchEndpoint } from '../types';
import { NativeBatchRejected } from './errors';
import { callProvider, callProviderOk, jsonLines, providerRequest, rejection, streamProvider } from './http';
import type { NativeBatchAdapter, NativeBatchContext, NativeJobRef, NativeJobState, NativeLineResult, NativeResultsContext } from './types';

const NAME = 'OpenAI Batches';

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

const base = (ctx: NativeBatchContext) => ctx.provider.adapter.baseUrl(ctx.provider.target).replace(/\/+$/, '');
const seg = encodeURIComponent;

/** A multipart/form-data upload of one JSONL file (the provider's Files API). */
function uploadRequest(ctx: NativeBatchContext, jsonl: Buffer) {
  const boundary = `----gateway-${randomUUID()}`;
  const head =
    `--${boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
    `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${ctx.batchId}.jsonl"\r\ncontent-type: application/jsonl\r\n\r\n`;
  const bytes = Buffer.concat([Buffer.from(head), jsonl, Buffer.from(`\r\n--${boundary}--\r\n`)]);
  return providerRequest(ctx, 'POST', `${base(ctx)}/files`, { bytes, contentType: `multipart/form-data; boundary=${boundary}` });
}

const STATUS: Record<string, NativeJobState['status']> = {
  validating: 'in_progress',
  in_progress: 'in_progress',
  finalizing: 'in_progress',
  cancelling: 'cancelling',
  completed: 'completed',
  failed: 'failed',
  expired: 'expired',
  cancelled: 'cancelled',
};

function stateOf(job: NativeJobRef, body: unknown): NativeJobState {
  const b = obj(body);
  const providerStatus = str(b.status) ?? 'unknown';
  const counts = obj(b.request_counts);
  const files = Object.fromEntries((['output_file_id', 'error_file_id'] as const).flatMap((k) => (typeof b[k] === 'string' ? [[k, b[k] as string]] : [])));
  const errors = Array.isArray(obj(b.errors).data)
    ? (obj(b.errors).data as unknown[]).map((e) => ({
        code: str(obj(e).code) ?? 'provider_error',
        message: str(obj(e).message) ?? 'The provider failed the batch.',
      }))
    : undefined;
  return {
    status: STATUS[providerStatus] ?? 'in_progress',
    providerStatus,
    counts: b.request_counts ? { completed: num(counts.completed), failed: num(counts.failed) } : undefined,
    ...(errors?.length ? { errors } : {}),
    job: { id: job.id, data: { ...job.data, ...files } },
  };
}

/** OpenAI's usage of any batch endpoint's answer (Responses API `input_tokens` / `output_tokens` too), in the chat shape pricing reads. */
export function usageOf(body: unknown): Usage | undefined {
  const u = obj(obj(body).usage);
  if (!Object.keys(u).length) return undefined;
  const prompt = num(u.prompt_tokens ?? u.input_tokens);
  const completion = num(u.completion_tokens ?? u.output_tokens);
  const cached = num(obj(u.prompt_tokens_details ?? u.input_tokens_details).cached_tokens);
  const reasoning = num(obj(u.completion_tokens_details ?? u.output_tokens_details).reasoning_tokens);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: num(u.total_tokens) || prompt + completion,
    ...(cached ? { prompt_tokens_details: { cached_tokens: cached } } : {}),
    ...(reasoning ? { completion_tokens_details: { reasoning_tokens: reasoning } } : {}),
  };
}

async function* fileLines(ctx: NativeResultsContext, fileId: string): AsyncGenerator<NativeLineResult> {
  const body = await streamProvider(ctx, NAME, providerRequest(ctx, 'GET', `${base(ctx)}/files/${seg(fileId)}/content`));
  for await (const value of jsonLines(body)) {
    const v = obj(value);
    const customId = str(v.custom_id);
    const line = customId === undefined ? undefined : ctx.lineOf(customId);
    if (line === undefined) continue; // not a line of this batch
    const response = v.response ? obj(v.response) : undefined;
    const error = v.error ? obj(v.error) : undefined;
    yield {
      line,
      ...(str(v.id) ? { id: str(v.id) } : {}),
      response: response ? { status_code: num(response.status_code), request_id: str(response.request_id) ?? null, body: response.body } : null,
      error: response ? null : { code: str(error?.code) ?? 'provider_error', message: str(error?.message) ?? `The provider did not answer line ${line}.` },
      usage: response ? usageOf(response.body) : undefined,
    };
  }
}

export const openaiBatches: NativeBatchAdapter = {
  name: NAME,
  providers: ['openai'],
  endpoints: ['/v1/chat/completions', '/v1/embeddings', '/v1/responses', '/v1/completions'] satisfies BatchEndpoint[],
  batchDiscount: 0.5,
  oneModelPerJob: true,

  prepare(ctx, line) {
    const model = line.body.model as string;
    return { ok: true, model, payload: { custom_id: line.customId, method: 'POST', url: ctx.endpoint, body: line.body } };
  },

  async submit(ctx, lines) {
    const parts: Buffer[] = [];
    for await (const line of lines) parts.push(Buffer.from(`${JSON.stringify(line.payload)}\n`));
    const file = obj(await callProviderOk(ctx, NAME, uploadRequest(ctx, Buffer.concat(parts))));
    const inputFileId = str(file.id);
    if (!inputFileId) throw new NativeBatchRejected(`${NAME} answered the upload without a file id.`, 'invalid_provider_response', 502);
    const created = obj(
      await callProviderOk(
        ctx,
        NAME,
        providerRequest(ctx, 'POST', `${base(ctx)}/batches`, {
          json: { input_file_id: inputFileId, endpoint: ctx.endpoint, completion_window: '24h', metadata: { gateway_batch_id: ctx.batchId } },
        }),
      ),
    );
    const id = str(created.id);
    if (!id) throw new NativeBatchRejected(`${NAME} answered the batch creation without an id.`, 'invalid_provider_response', 502);
    return { id, data: { input_file_id: inputFileId } };
  },

  async findJob(ctx) {
    const list = obj(await callProviderOk(ctx, NAME, providerRequest(ctx, 'GET', `${base(ctx)}/batches?limit=100`)));
    const found = (Array.isArray(list.data) ? list.data : []).map(obj).find((b) => obj(b.metadata).gateway_batch_id === ctx.batchId);
    const id = found && str(found.id);
    const inputFileId = found && str(found.input_file_id);
    if (!id) return undefined;
    const data: Record<string, string> = inputFileId ? { input_file_id: inputFileId } : {};
    return { id, data };
  },

  async poll(ctx, job) {
    return stateOf(job, await callProviderOk(ctx, NAME, providerRequest(ctx, 'GET', `${base(ctx)}/batches/${seg(job.id)}`)));
  },

  async cancel(ctx, job) {
    const res = await callProvider(ctx, NAME, providerRequest(ctx, 'POST', `${base(ctx)}/batches/${seg(job.id)}/cancel`));
    // A batch that has ended already cannot be cancelled: nothing to stop.
    if (res.status >= 300 && res.status !== 400 && res.status !== 409) throw rejection(NAME, res);
  },

  async *results(ctx, job) {
    for (const key of ['output_file_id', 'error_file_id'] as const) {
      const fileId = job.data?.[key];
      if (fileId) yield* fileLines(ctx, fileId);
    }
  },
};
