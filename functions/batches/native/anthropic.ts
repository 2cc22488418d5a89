/**
 * Anthropic's Message Batches API as a native batch adapter. A `/v1/chat/completions` line is
 * translated into a Messages request by the live path's translator (the anthropic adapter's
 * `chat.request`), a `/v1/messages` line is one already; each is sent under the provider-side
 * id `lineKey(line)` (Anthropic's ids are `^[a-zA-Z0-9_-]{1,64}$`). The job is polled on
 * `processing_status`; once `ended`, `results_url` is streamed and each `succeeded` message is
 * translated back with the live path's `chat.response` (a chat completion), `errored` into an
 * error answer, `canceled` and `expired` into error lines.
 */
import { anthropicUsage, usageCounts } from '../../providers/anthropic/stream';
import type { ChatRequest } from '../../providers/types';
import { NativeBatchRejected } from './errors';
import { callProvider, callProviderOk, jsonLines, providerRequest, rejection, streamProvider } from './http';
import { lineKey, lineOfKey, type NativeBatchAdapter, type NativeBatchContext, type NativeJobState, type NativeLineResult } from './types';

const NAME = 'Anthropic Message Batches';

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

const base = (ctx: NativeBatchContext) => ctx.provider.adapter.baseUrl(ctx.provider.target).replace(/\/+$/, '');
const batchUrl = (ctx: NativeBatchContext, id: string, suffix = '') => `${base(ctx)}/messages/batches/${encodeURIComponent(id)}${suffix}`;

/** The Messages request of a chat line, as the live path would send it (without streaming). */
function messagesParams(ctx: NativeBatchContext, body: Record<string, unknown>): Obj {
  const chat = ctx.provider.adapter.chat;
  if (!chat) throw new NativeBatchRejected(`${NAME}: the provider has no chat translator.`, 'native_batch_unsupported');
  const request = chat.request({ ...body, stream: false } as ChatRequest, ctx.provider.target);
  const params = obj(JSON.parse(typeof request.body === 'string' ? request.body : (request.body?.toString('utf8') ?? '{}')));
  delete params.stream;
  return params;
}

function stateOf(id: string, body: unknown): NativeJobState {
  const b = obj(body);
  const providerStatus = str(b.processing_status) ?? 'unknown';
  const c = obj(b.request_counts);
  const counts = { completed: num(c.succeeded), failed: num(c.errored) + num(c.canceled) + num(c.expired) };
  const resultsUrl = str(b.results_url);
  const data: Record<string, string> = resultsUrl ? { results_url: resultsUrl } : {};
  const job = { id, data };
  if (providerStatus === 'ended') return { status: 'completed', providerStatus, counts, job };
  return { status: providerStatus === 'canceling' ? 'cancelling' : 'in_progress', providerStatus, counts, job };
}

/** An `errored` result's error as the answer the live path would have given (OpenAI's error shape). */
function erroredAnswer(result: Obj): NativeLineResult['response'] {
  const inner = obj(obj(result.error).error);
  const type = str(inner.type) ?? 'api_error';
  const status = type === 'invalid_request_error' ? 400 : type === 'not_found_error' ? 404 : type === 'overloaded_error' ? 529 : 500;
  return { status_code: status, request_id: null, body: { error: { message: str(inner.message) ?? 'The request failed.', type, param: null, code: null } } };
}

function lineResult(ctx: NativeBatchContext, value: unknown): NativeLineResult | undefined {
  const v = obj(value);
  const line = lineOfKey(str(v.custom_id) ?? '');
  if (line === undefined) return undefined;
  const result = obj(v.result);
  const type = str(result.type);
  if (type === 'succeeded') {
    const message = obj(result.message);
    const model = str(message.model);
    const usage = message.usage ? anthropicUsage(usageCounts(message.usage)) : undefined;
    if (ctx.endpoint === '/v1/messages') return { line, response: { status_code: 200, request_id: null, body: message }, error: null, usage, model };
    const created = Math.floor(Date.now() / 1000);
    const completion = ctx.provider.adapter.chat!.response(message, {
      model: model ?? '',
      id: str(message.id) ?? `chatcmpl-${line}`,
      created,
      includeUsage: true,
    });
    return { line, response: { status_code: 200, request_id: null, body: completion }, error: null, usage: completion.usage ?? usage, model };
  }
  if (type === 'errored') return { line, response: erroredAnswer(result), error: null };
  const code = type === 'expired' ? 'batch_expired' : 'batch_cancelled';
  const message = type === 'expired' ? `Line ${line} was not run before the provider's batch expired.` : `Line ${line} was not run: the batch was cancelled.`;
  return { line, response: null, error: { code, message } };
}

export const anthropicMessageBatches: NativeBatchAdapter = {
  name: NAME,
  providers: ['anthropic'],
  endpoints: ['/v1/chat/completions', '/v1/messages'],
  batchDiscount: 0.5,
  oneModelPerJob: false,

  prepare(ctx, line) {
    let params: Obj;
    try {
      params = ctx.endpoint === '/v1/messages' ? { ...line.body } : messagesParams(ctx, line.body);
    } catch (err) {
      return { ok: false, code: 'invalid_request', message: `Line ${line.line} cannot be sent to Anthropic: ${(err as Error).message}` };
    }
    delete params.stream;
    return { ok: true, model: str(params.model) ?? String(line.body.model), payload: { custom_id: lineKey(line.line), params } };
  },

  async submit(ctx, lines) {
    const requests: Obj[] = [];
    for await (const line of lines) requests.push(line.payload);
    const created = obj(await callProviderOk(ctx, NAME, providerRequest(ctx, 'POST', `${base(ctx)}/messages/batches`, { json: { requests } })));
    const id = str(created.id);
    if (!id) throw new NativeBatchRejected(`${NAME} answered the batch creation without an id.`, 'invalid_provider_response', 502);
    return { id };
  },

  async poll(ctx, job) {
    return stateOf(job.id, await callProviderOk(ctx, NAME, providerRequest(ctx, 'GET', batchUrl(ctx, job.id))));
  },

  async cancel(ctx, job) {
    const res = await callProvider(ctx, NAME, providerRequest(ctx, 'POST', batchUrl(ctx, job.id, '/cancel')));
    // A batch that has ended already cannot be cancelled: nothing to stop.
    if (res.status >= 300 && res.status !== 400 && res.status !== 409) throw rejection(NAME, res);
  },

  async *results(ctx, job) {
    const url = job.data?.results_url ?? batchUrl(ctx, job.id, '/results');
    const body = await streamProvider(ctx, NAME, providerRequest(ctx, 'GET', url));
    for await (const value of jsonLines(body)) {
      const result = lineResult(ctx, value);
      if (result) yield result;
    }
  },
};
