/**
 * Fake provider batch APIs for native batch mode, on one server:
 *
 * OpenAI (Files + Batches):
 * - POST /v1/files (multipart: file, purpose)    GET /v1/files/{id}/content
 * - POST /v1/batches                             GET /v1/batches (metadata kept)
 * - GET  /v1/batches/{id}                        each poll advances the job one step
 * - POST /v1/batches/{id}/cancel
 *
 * Anthropic (Message Batches):
 * - POST /v1/messages/batches                    GET /v1/messages/batches/{id} (advances)
 * - POST /v1/messages/batches/{id}/cancel        GET /v1/messages/batches/{id}/results
 *
 * A job runs for `steps` polls (default 3), then ends with every line answered: a line whose
 * text contains `FAIL` gets a 400 error answer, the others a 200 whose text is `answer of
 * <content>` and usage {10 in, 5 out}. Knobs: `failJobs` (an OpenAI job ends `failed` with
 * errors), `hold` (jobs never end until cancelled). A cancelled job ends at its next poll with
 * the first half of its lines answered and the rest not run. The shared knobs of
 * ./behaviour.ts apply to every request (error injection: a provider that is down).
 */
import { randomBytes } from 'node:crypto';
import { obj, startFake, str, type Exchange, type FakeOptions, type FakeServer } from './behaviour';
import { openaiError } from './openai';

export const FAKE_BATCH_USAGE = { input: 10, output: 5 };

interface FakeBatchJob {
  id: string;
  kind: 'openai' | 'anthropic';
  /** The requests, in order: [provider custom_id, request body]. */
  requests: Array<[string, Record<string, unknown>]>;
  endpoint: string;
  metadata: unknown;
  polls: number;
  cancelled: boolean;
  ended: boolean;
  status: string;
  outputFileId: string | null;
  errorFileId: string | null;
}

export interface BatchApiFake extends FakeServer {
  readonly jobs: Map<string, FakeBatchJob>;
  /** `steps`: polls before a job ends (default 3); `failJobs`, `hold`: see above. Changed by tests. */
  readonly knobs: { steps: number; failJobs: boolean; hold: boolean };
  /** The fake's own output file text of an OpenAI job (what the gateway must hand back unchanged). */
  fileText(fileId: string): string | undefined;
}

const rid = () => randomBytes(8).toString('hex');
const now = () => Math.floor(Date.now() / 1000);

function textOf(body: Record<string, unknown>): string {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const last = obj(messages.at(-1));
  return typeof last.content === 'string' ? last.content : JSON.stringify(last.content ?? body.input ?? '');
}

export async function startBatchApiFake(options: FakeOptions = {}): Promise<BatchApiFake> {
  const jobs = new Map<string, FakeBatchJob>();
  const files = new Map<string, string>();
  const knobs = { steps: 3, failJobs: false, hold: false };

  /** Which lines ran: all of a job that ended by itself, the first half of a cancelled one. */
  const ranCount = (job: FakeBatchJob) => (job.cancelled ? Math.floor(job.requests.length / 2) : job.requests.length);

  const openaiJob = (job: FakeBatchJob) => {
    const ran = job.ended ? ranCount(job) : Math.min(job.polls, job.requests.length);
    const failed = job.requests.slice(0, ran).filter(([, b]) => textOf(b).includes('FAIL')).length;
    return {
      id: job.id,
      object: 'batch',
      endpoint: job.endpoint,
      errors:
        job.status === 'failed'
          ? { object: 'list', data: [{ code: 'invalid_model', message: 'The model does not support batches.', param: 'model', line: null }] }
          : null,
      input_file_id: 'file-in',
      completion_window: '24h',
      status: job.status,
      output_file_id: job.outputFileId,
      error_file_id: job.errorFileId,
      created_at: now(),
      request_counts: { total: job.requests.length, completed: ran - failed, failed },
      metadata: job.metadata ?? null,
    };
  };

  const endOpenAI = (job: FakeBatchJob) => {
    job.ended = true;
    if (knobs.failJobs) {
      job.status = 'failed';
      return;
    }
    job.status = job.cancelled ? 'cancelled' : 'completed';
    const out: string[] = [];
    const err: string[] = [];
    job.requests.forEach(([customId, body], i) => {
      if (i >= ranCount(job)) return;
      const text = textOf(body);
      const line = text.includes('FAIL')
        ? {
            id: `batch_req_${rid()}`,
            custom_id: customId,
            response: {
              status_code: 400,
              request_id: `req_${rid()}`,
              body: { error: { message: 'Bad line.', type: 'invalid_request_error', param: null, code: null } },
            },
            error: null,
          }
        : {
            id: `batch_req_${rid()}`,
            custom_id: customId,
            response: {
              status_code: 200,
              request_id: `req_${rid()}`,
              body: {
                id: `chatcmpl-${rid()}`,
                object: 'chat.completion',
                created: now(),
                model: body.model,
                choices: [{ index: 0, message: { role: 'assistant', content: `answer of ${text}` }, logprobs: null, finish_reason: 'stop' }],
                usage: {
                  prompt_tokens: FAKE_BATCH_USAGE.input,
                  completion_tokens: FAKE_BATCH_USAGE.output,
                  total_tokens: FAKE_BATCH_USAGE.input + FAKE_BATCH_USAGE.output,
                },
              },
            },
            error: null,
          };
      (text.includes('FAIL') ? err : out).push(JSON.stringify(line));
    });
    if (out.length) files.set((job.outputFileId = `file-out-${rid()}`), `${out.join('\n')}\n`);
    if (err.length) files.set((job.errorFileId = `file-err-${rid()}`), `${err.join('\n')}\n`);
  };

  const anthropicJob = (job: FakeBatchJob, url: string) => {
    const ran = job.ended ? ranCount(job) : 0;
    const errored = job.requests.slice(0, ran).filter(([, b]) => textOf(b).includes('FAIL')).length;
    return {
      id: job.id,
      type: 'message_batch',
      processing_status: job.status,
      request_counts: {
        processing: job.ended ? 0 : job.requests.length,
        succeeded: ran - errored,
        errored,
        canceled: job.ended ? job.requests.length - ran : 0,
        expired: 0,
      },
      ended_at: job.ended ? new Date().toISOString() : null,
      created_at: new Date().toISOString(),
      expires_at: new Date(Date.now() + 86_400_000).toISOString(),
      cancel_initiated_at: job.cancelled ? new Date().toISOString() : null,
      results_url: job.ended ? `${url}/v1/messages/batches/${job.id}/results` : null,
    };
  };

  const anthropicResults = (job: FakeBatchJob) =>
    job.requests
      .map(([customId, params], i) => {
        if (i >= ranCount(job)) return { custom_id: customId, result: { type: 'canceled' } };
        const text = textOf(params);
        if (text.includes('FAIL'))
          return { custom_id: customId, result: { type: 'errored', error: { type: 'error', error: { type: 'invalid_request_error', message: 'Bad line.' } } } };
        return {
          custom_id: customId,
          result: {
            type: 'succeeded',
            message: {
              id: `msg_${rid()}`,
              type: 'message',
              role: 'assistant',
              model: params.model,
              content: [{ type: 'text', text: `answer of ${text}` }],
              stop_reason: 'end_turn',
              stop_sequence: null,
              usage: { input_tokens: FAKE_BATCH_USAGE.input, output_tokens: FAKE_BATCH_USAGE.output },
            },
          },
        };
      })
      .map((r) => JSON.stringify(r))
      .join('\n');

  const advance = (job: FakeBatchJob) => {
    if (job.ended) return;
    job.polls += 1;
    const due = job.cancelled || (!knobs.hold && job.polls >= knobs.steps);
    if (job.kind === 'openai') {
      if (due) endOpenAI(job);
      else job.status = job.polls === 1 ? 'validating' : 'in_progress';
    } else if (due) {
      job.ended = true;
      job.status = 'ended';
    }
  };

  let server!: FakeServer;
  async function handle(ex: Exchange): Promise<void> {
    const { rec } = ex;
    if (!(await ex.begin(undefined, false))) return;
    const path = rec.path;
    let m: RegExpExecArray | null;
    if (rec.method === 'POST' && path === '/v1/files') {
      const upload = rec.form?.files.find((f) => f.name === 'file');
      if (!upload || rec.form?.fields.purpose !== 'batch') return ex.error(400, "Missing 'file' or purpose 'batch'.");
      const id = `file-${rid()}`;
      files.set(id, upload.data.toString('utf8'));
      return ex.json(200, {
        id,
        object: 'file',
        bytes: upload.data.length,
        created_at: now(),
        filename: upload.filename,
        purpose: 'batch',
        status: 'processed',
      });
    }
    if (rec.method === 'GET' && (m = /^\/v1\/files\/([^/]+)\/content$/.exec(path))) {
      const text = files.get(decodeURIComponent(m[1]!));
      if (text === undefined) return ex.error(404, 'No such File object.');
      return ex.send({ status: 200, headers: { 'content-type': 'application/octet-stream' }, body: text });
    }
    if (rec.method === 'POST' && path === '/v1/chat/completions') {
      // The live answer to a line, with the same usage as a batch answer (to compare their costs).
      const body = obj(rec.body);
      return ex.json(200, {
        id: `chatcmpl-${rid()}`,
        object: 'chat.completion',
        created: now(),
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: `answer of ${textOf(body)}` }, logprobs: null, finish_reason: 'stop' }],
        usage: {
          prompt_tokens: FAKE_BATCH_USAGE.input,
          completion_tokens: FAKE_BATCH_USAGE.output,
          total_tokens: FAKE_BATCH_USAGE.input + FAKE_BATCH_USAGE.output,
        },
      });
    }
    if (rec.method === 'POST' && path === '/v1/batches') {
      const body = obj(rec.body);
      const input = files.get(str(body.input_file_id) ?? '');
      if (input === undefined) return ex.error(400, 'invalid input_file_id');
      const requests = input
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { custom_id: string; body: Record<string, unknown> })
        .map((r) => [r.custom_id, r.body] as [string, Record<string, unknown>]);
      const job: FakeBatchJob = {
        id: `batch_${rid()}`,
        kind: 'openai',
        requests,
        endpoint: str(body.endpoint) ?? '',
        metadata: body.metadata,
        polls: 0,
        cancelled: false,
        ended: false,
        status: 'validating',
        outputFileId: null,
        errorFileId: null,
      };
      jobs.set(job.id, job);
      return ex.json(200, openaiJob(job));
    }
    if (rec.method === 'GET' && path === '/v1/batches') {
      const data = [...jobs.values()]
        .filter((j) => j.kind === 'openai')
        .reverse()
        .map(openaiJob);
      return ex.json(200, { object: 'list', data, has_more: false });
    }
    if ((m = /^\/v1\/batches\/([^/]+)(\/cancel)?$/.exec(path))) {
      const job = jobs.get(decodeURIComponent(m[1]!));
      if (!job) return ex.error(404, 'No such batch.');
      if (m[2]) {
        if (job.ended) return ex.error(400, `Cannot cancel a batch with status ${job.status}.`);
        job.cancelled = true;
        job.status = 'cancelling';
        return ex.json(200, openaiJob(job));
      }
      advance(job);
      return ex.json(200, openaiJob(job));
    }
    if (rec.method === 'POST' && path === '/v1/messages/batches') {
      if (!rec.headers['x-api-key']) return ex.error(401, 'x-api-key header is required');
      const requests = (Array.isArray(obj(rec.body).requests) ? (obj(rec.body).requests as unknown[]) : []).map(
        (r) => [str(obj(r).custom_id) ?? '', obj(obj(r).params)] as [string, Record<string, unknown>],
      );
      if (requests.some(([id]) => !/^[a-zA-Z0-9_-]{1,64}$/.test(id))) return ex.error(400, 'custom_id: invalid format');
      const job: FakeBatchJob = {
        id: `msgbatch_${rid()}`,
        kind: 'anthropic',
        requests,
        endpoint: '/v1/messages',
        metadata: null,
        polls: 0,
        cancelled: false,
        ended: false,
        status: 'in_progress',
        outputFileId: null,
        errorFileId: null,
      };
      jobs.set(job.id, job);
      return ex.json(200, anthropicJob(job, server.url));
    }
    if ((m = /^\/v1\/messages\/batches\/([^/]+)(\/cancel|\/results)?$/.exec(path))) {
      const job = jobs.get(decodeURIComponent(m[1]!));
      if (!job) return ex.error(404, 'Batch not found.');
      if (m[2] === '/cancel') {
        if (!job.ended) {
          job.cancelled = true;
          job.status = 'canceling';
        }
        return ex.json(200, anthropicJob(job, server.url));
      }
      if (m[2] === '/results') {
        if (!job.ended) return ex.error(400, 'Batch is still processing.');
        return ex.send({ status: 200, headers: { 'content-type': 'application/x-jsonl' }, body: `${anthropicResults(job)}\n` });
      }
      advance(job);
      return ex.json(200, anthropicJob(job, server.url));
    }
    return ex.error(404, `Unknown fake batch route: ${rec.method} ${path}`);
  }

  server = await startFake('batch-api', options, openaiError, handle);
  return Object.assign(server, { jobs, knobs, fileText: (id: string) => files.get(id) });
}
