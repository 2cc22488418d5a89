/**
 * Fake Vertex AI batch prediction and the Cloud Storage JSON API it reads and writes, on one
 * server (Bearer token auth on every call):
 *
 * - POST /upload/storage/v1/b/{bucket}/o?uploadType=media&name=…   upload an object
 * - GET  /storage/v1/b/{bucket}/o?prefix=…&pageToken=…               list (`pageSize` objects a page)
 * - GET  /storage/v1/b/{bucket}/o/{name}?alt=media                   download
 * - POST /v1/projects/{p}/locations/{r}/batchPredictionJobs          create (checks the model,
 *     `jsonl` formats and that the input object exists)
 * - GET  /v1/projects/{p}/locations/{r}/batchPredictionJobs?filter=display_name="…"   list
 * - GET  /v1/projects/{p}/locations/{r}/batchPredictionJobs/{id}     JOB_STATE_PENDING, then
 *     RUNNING, then SUCCEEDED (PARTIALLY_SUCCEEDED when a request failed) with
 *     `outputInfo.gcsOutputDirectory` and `completionStats`
 * - POST …/batchPredictionJobs/{id}:cancel                            CANCELLING, CANCELLED at the
 *     next poll (nothing written); an ended job is a 400 FAILED_PRECONDITION
 *
 * Output: `{outputUriPrefix}/prediction-model-{time}/predictions.jsonl`, lines in reverse
 * input order, each `{key?, request, response, status}` (the key only with `echoKey`,
 * the default). A user text containing `[record-error]` gets a `status` error and no
 * response. `failJob` fails every job at its first poll.
 */
import { answer, promptTokens } from './answer';
import { geminiConversation } from './gemini';
import { arr, bearer, obj, startFake, str, type ErrorShaper, type Exchange, type FakeServer } from './behaviour';

export interface VertexBatchFakeOptions {
  token: string;
  /** Keep the caller's `key` beside `request` in the output (default true). */
  echoKey?: boolean;
  failJob?: string;
  /** Objects per list page (default 1000). */
  pageSize?: number;
}

export interface FakeVertexJob {
  name: string;
  displayName: string;
  model: string;
  inputUri: string;
  outputPrefix: string;
  state: string;
  outputDirectory?: string;
  polls: number;
  error?: string;
  stats?: { successfulCount: string; failedCount: string };
}

export interface VertexBatchFake extends FakeServer {
  /** Objects by `bucket/name`. */
  objects: Map<string, Buffer>;
  jobs: FakeVertexJob[];
}

const STATUS_NAME: Record<number, string> = { 400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND' };
const googleError: ErrorShaper = (status, message, type) => ({
  body: { error: { code: status, message, status: type ?? STATUS_NAME[status] ?? 'INTERNAL' } },
});

const ENDED = new Set(['JOB_STATE_SUCCEEDED', 'JOB_STATE_PARTIALLY_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_CANCELLED', 'JOB_STATE_EXPIRED']);
const gcsKey = (uri: string) => /^gs:\/\/(.+)$/.exec(uri)?.[1] ?? '';

function userText(request: Record<string, unknown>): string {
  return arr(request.contents)
    .flatMap((c) => arr(obj(c).parts).map((p) => str(obj(p).text) ?? ''))
    .join(' ');
}

export async function startVertexBatchFake(o: VertexBatchFakeOptions): Promise<VertexBatchFake> {
  const objects = new Map<string, Buffer>();
  const jobs: FakeVertexJob[] = [];

  const run = (job: FakeVertexJob) => {
    const lines = (objects.get(gcsKey(job.inputUri)) ?? Buffer.alloc(0))
      .toString('utf8')
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as { key?: string; request: Record<string, unknown> });
    let failed = 0;
    const out = lines.map((line, i) => {
      const echoed = {
        ...(o.echoKey === false ? {} : line.key !== undefined ? { key: line.key } : {}),
        request: line.request,
        processed_time: '2026-11-27T03:00:00Z',
      };
      if (userText(line.request).includes('[record-error]')) {
        failed++;
        return { ...echoed, status: 'Bad Request: 400 Unable to submit request because it has an empty text parameter.' };
      }
      const conv = geminiConversation(line.request, job.model);
      const a = answer(conv);
      const parts = a.kind === 'text' ? [{ text: a.text }] : [{ functionCall: { name: a.name, args: a.args } }];
      const prompt = promptTokens(conv);
      return {
        ...echoed,
        status: '',
        response: {
          candidates: [{ content: { role: 'model', parts }, finishReason: a.kind === 'text' && a.finish === 'length' ? 'MAX_TOKENS' : 'STOP' }],
          usageMetadata: { promptTokenCount: prompt, candidatesTokenCount: a.completionTokens, totalTokenCount: prompt + a.completionTokens },
          modelVersion: `${job.model}-001`,
          responseId: `fake-batch-${i + 1}`,
        },
      };
    });
    const dir = `${job.outputPrefix.replace(/\/$/, '')}/prediction-model-2026-11-27T03:00:00.000000Z`;
    objects.set(
      `${gcsKey(dir)}/predictions.jsonl`,
      Buffer.from(
        `${out
          .reverse()
          .map((l) => JSON.stringify(l))
          .join('\n')}\n`,
      ),
    );
    job.outputDirectory = dir;
    job.stats = { successfulCount: String(lines.length - failed), failedCount: String(failed) };
    job.state = failed ? 'JOB_STATE_PARTIALLY_SUCCEEDED' : 'JOB_STATE_SUCCEEDED';
  };

  const advance = (job: FakeVertexJob) => {
    job.polls++;
    if (ENDED.has(job.state)) return;
    if (job.state === 'JOB_STATE_CANCELLING') job.state = 'JOB_STATE_CANCELLED';
    else if (o.failJob) {
      job.state = 'JOB_STATE_FAILED';
      job.error = o.failJob;
    } else if (job.state === 'JOB_STATE_PENDING') job.state = 'JOB_STATE_RUNNING';
    else run(job);
  };

  const view = (job: FakeVertexJob) => ({
    name: job.name,
    displayName: job.displayName,
    model: job.model.startsWith('publishers/') ? job.model : `publishers/google/models/${job.model}`,
    state: job.state,
    createTime: '2026-11-27T03:00:00Z',
    ...(job.error ? { error: { code: 9, message: job.error } } : {}),
    ...(job.outputDirectory ? { outputInfo: { gcsOutputDirectory: job.outputDirectory } } : {}),
    ...(job.stats ? { completionStats: job.stats } : {}),
  });

  const storage = (ex: Exchange) => {
    const { rec } = ex;
    const upload = /^\/upload\/storage\/v1\/b\/([^/]+)\/o$/.exec(rec.path);
    if (rec.method === 'POST' && upload) {
      if (rec.query.uploadType !== 'media' || !rec.query.name) return ex.error(400, 'uploadType=media and name are required');
      objects.set(`${decodeURIComponent(upload[1]!)}/${rec.query.name}`, rec.rawBody);
      return ex.json(200, { kind: 'storage#object', bucket: decodeURIComponent(upload[1]!), name: rec.query.name, size: String(rec.rawBody.length) });
    }
    const list = /^\/storage\/v1\/b\/([^/]+)\/o$/.exec(rec.path);
    if (rec.method === 'GET' && list) {
      const bucket = decodeURIComponent(list[1]!);
      const names = [...objects.keys()]
        .filter((k) => k.startsWith(`${bucket}/${rec.query.prefix ?? ''}`))
        .map((k) => k.slice(bucket.length + 1))
        .sort();
      const size = o.pageSize ?? 1000;
      const from = Number(rec.query.pageToken ?? 0);
      const page = names.slice(from, from + size);
      return ex.json(200, {
        kind: 'storage#objects',
        ...(page.length ? { items: page.map((name) => ({ name, size: String(objects.get(`${bucket}/${name}`)!.length) })) } : {}),
        ...(from + size < names.length ? { nextPageToken: String(from + size) } : {}),
      });
    }
    const one = /^\/storage\/v1\/b\/([^/]+)\/o\/([^/]+)$/.exec(rec.path);
    if (one && rec.query.alt === 'media') {
      const body = objects.get(`${decodeURIComponent(one[1]!)}/${decodeURIComponent(one[2]!)}`);
      if (body) return ex.send({ status: 200, headers: { 'content-type': 'application/octet-stream' }, body });
      return ex.error(404, 'No such object');
    }
    return ex.error(404, `Not Found: ${rec.method} ${rec.path}`);
  };

  const JOBS = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/batchPredictionJobs(?:\/([^/:]+)(:cancel)?)?$/;
  const aiplatform = (ex: Exchange) => {
    const { rec } = ex;
    const m = JOBS.exec(rec.path);
    if (!m) return ex.error(404, `Not Found: ${rec.method} ${rec.path}`);
    const [, project, region, id, cancel] = m;
    if (!id && rec.method === 'POST') {
      const b = obj(rec.body);
      const model = str(b.model) ?? '';
      if (!/^publishers\/google\/models\/[\w.@-]+$/.test(model)) return ex.error(400, `Invalid model '${model}'`);
      const input = obj(b.inputConfig);
      const output = obj(b.outputConfig);
      if (input.instancesFormat !== 'jsonl' || output.predictionsFormat !== 'jsonl')
        return ex.error(400, 'instancesFormat and predictionsFormat must be jsonl');
      const inputUri = str(arr(obj(input.gcsSource).uris)[0]) ?? '';
      if (!objects.has(gcsKey(inputUri))) return ex.error(400, `Input file ${inputUri} does not exist.`);
      const outputPrefix = str(obj(output.gcsDestination).outputUriPrefix) ?? '';
      const job: FakeVertexJob = {
        name: `projects/${project}/locations/${region}/batchPredictionJobs/${9000 + jobs.length + 1}`,
        displayName: str(b.displayName) ?? '',
        model: model.slice(model.lastIndexOf('/') + 1),
        inputUri,
        outputPrefix,
        state: 'JOB_STATE_PENDING',
        polls: 0,
      };
      jobs.push(job);
      return ex.json(200, view(job));
    }
    if (!id && rec.method === 'GET') {
      const wanted = /^display_name="(.*)"$/.exec(rec.query.filter ?? '')?.[1];
      const found = jobs.filter((j) => wanted === undefined || j.displayName === wanted);
      return ex.json(200, found.length ? { batchPredictionJobs: found.map(view) } : {});
    }
    const job = jobs.find((j) => j.name === `projects/${project}/locations/${region}/batchPredictionJobs/${id}`);
    if (!job) return ex.error(404, `The BatchPredictionJob does not exist.`);
    if (cancel && rec.method === 'POST') {
      if (ENDED.has(job.state)) return ex.error(400, `The job is in state ${job.state} and cannot be cancelled.`, 'FAILED_PRECONDITION');
      job.state = 'JOB_STATE_CANCELLING';
      return ex.json(200, {});
    }
    advance(job);
    return ex.json(200, view(job));
  };

  const server = await startFake('vertex-batch', {}, googleError, async (ex) => {
    if (bearer(ex.rec) !== o.token) return ex.error(401, 'Request had invalid authentication credentials.');
    if (!(await ex.begin(undefined, false))) return;
    return ex.rec.path.startsWith('/v1/') ? aiplatform(ex) : storage(ex);
  });
  return Object.assign(server, { objects, jobs });
}
