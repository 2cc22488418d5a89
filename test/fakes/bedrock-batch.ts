/**
 * Fake AWS Bedrock batch inference: the control plane's model invocation jobs and the S3
 * bucket they read and write, on one server (requests are told apart by the service of
 * their SigV4 credential scope, `bedrock` or `s3`; S3 is path-style, `/{bucket}/{key}`).
 *
 * - PUT/GET/DELETE /{bucket}/{key}                        S3 objects
 * - POST /model-invocation-job                            CreateModelInvocationJob: checks the
 *     job name, role ARN, model id and that the input object exists; a repeated
 *     `clientRequestToken` answers the job it created
 * - GET  /model-invocation-job/{jobArn}                   GetModelInvocationJob: `Submitted`,
 *     then `InProgress`, then each poll runs `recordsPerPoll` more records; when all ran the
 *     job is `Completed` (`PartiallyCompleted` when a record failed) and its records file is
 *     written to `{output}/{jobId}/{input name}.out`, with `manifest.json.out`
 * - POST /model-invocation-job/{jobArn}/stop              StopModelInvocationJob: `Stopping`, and
 *     `Stopped` at the next poll, with the records run so far in the records file; a job
 *     that has ended is a 400 ValidationException
 *
 * Records: Anthropic Claude (Messages body), Amazon Nova (messages-v1) and Titan / Cohere
 * embeddings are answered by the fakes' deterministic model; a user text containing
 * `[record-error]` gets a per-record error (`errorCode` 400). `failJob` fails every job at
 * its first poll. Every request's SigV4 signature is recomputed with `credentials`
 * (S3's rules for S3: path as sent, `x-amz-content-sha256` = the body's hash).
 */
import { createHash } from 'node:crypto';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { answer, embed, promptTokens, wordCount } from './answer';
import { anthropicConversation } from './anthropic';
import { bedrockConversation } from './bedrock';
import { arr, obj, startFake, str, type ErrorShaper, type Exchange, type FakeServer, type RecordedRequest } from './behaviour';

export interface BedrockBatchFakeOptions {
  credentials: { accessKeyId: string; secretAccessKey: string };
  region?: string;
  /** Records run per poll once a job is InProgress (default: all at once). */
  recordsPerPoll?: number;
  /** Fail every job at its first poll with this message. */
  failJob?: string;
}

export interface FakeJob {
  jobArn: string;
  jobName: string;
  modelId: string;
  roleArn: string;
  token?: string;
  inputUri: string;
  outputUri: string;
  status: string;
  message?: string;
  records: Array<{ recordId: string; modelInput: Record<string, unknown> }>;
  ran: number;
  polls: number;
}

export interface BedrockBatchFake extends FakeServer {
  /** The bucket's objects by `bucket/key`. */
  objects: Map<string, Buffer>;
  jobs: FakeJob[];
}

const s3Error = (_status: number, code: string, message: string) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;

const bedrockBatchError: ErrorShaper = (status, message, type) => ({
  body: { message },
  headers: {
    'x-amzn-errortype': `${type ?? (status === 404 ? 'ResourceNotFoundException' : status >= 500 ? 'InternalServerException' : 'ValidationException')}:`,
  },
});

const SCOPE = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request,\s*SignedHeaders=([^,]+),\s*Signature=([0-9a-f]{64})$/;

/** The service the request is signed for, or an error message. */
async function verify(rec: RecordedRequest, o: BedrockBatchFakeOptions): Promise<{ service: string } | { problem: string }> {
  const m = SCOPE.exec(rec.headers.authorization ?? '');
  const amzDate = rec.headers['x-amz-date'];
  if (!m || !amzDate) return { problem: 'Missing or malformed SigV4 authorization' };
  const [, accessKeyId, , region, service, signedList, signature] = m;
  if (accessKeyId !== o.credentials.accessKeyId) return { problem: 'The security token included in the request is invalid.' };
  if (region !== (o.region ?? 'us-east-1')) return { problem: `Credential should be scoped to a valid region, not '${region}'.` };
  const s3 = service === 's3';
  if (s3 && rec.headers['x-amz-content-sha256'] !== createHash('sha256').update(rec.rawBody).digest('hex')) {
    return { problem: 'The provided x-amz-content-sha256 header does not match what was computed.' };
  }
  const signed = signedList!.split(';');
  const headers: Record<string, string> = {};
  for (const h of signed) headers[h] = rec.headers[h] ?? '';
  const signer = new SignatureV4({
    credentials: { ...o.credentials, sessionToken: rec.headers['x-amz-security-token'] },
    region: region!,
    service: service!,
    sha256: Hash.bind(null, 'sha256'),
    applyChecksum: false,
    uriEscapePath: !s3,
  });
  const signingDate = new Date(amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'));
  const expected = await signer.sign(
    { method: rec.method, protocol: 'http:', hostname: '127.0.0.1', path: rec.path, query: rec.query, headers, body: rec.rawBody },
    { signingDate, signableHeaders: new Set(signed) },
  );
  const got = /Signature=([0-9a-f]+)/.exec(expected.headers.authorization ?? '')?.[1];
  return got === signature ? { service: service! } : { problem: 'The request signature we calculated does not match the signature you provided.' };
}

const s3Key = (uri: string) => /^s3:\/\/(.+)$/.exec(uri)?.[1] ?? '';

/** The text of the last user turn of a record's input (where `[record-error]` is looked for). */
function lastUserText(input: Record<string, unknown>): string {
  const messages = arr(input.messages);
  const last = obj(messages[messages.length - 1]);
  const content = last.content;
  if (typeof content === 'string') return content;
  return arr(content)
    .map((b) => str(obj(b).text) ?? '')
    .join(' ');
}

/** One record's output line: the model's InvokeModel answer, or the record's error. */
function runRecord(job: FakeJob, record: FakeJob['records'][number], n: number): Record<string, unknown> {
  const input = record.modelInput;
  const base = { recordId: record.recordId, modelInput: input };
  const model = job.modelId;
  if (/embed/.test(model)) {
    const text = str(input.inputText) ?? arr(input.texts).map(String).join(' ');
    if (text.includes('[record-error]'))
      return { ...base, error: { errorCode: 400, errorMessage: 'Malformed input request, please reformat your input and try again.' } };
    if (model.startsWith('cohere'))
      return { ...base, modelOutput: { embeddings: { float: arr(input.texts).map((t) => embed(String(t))) }, texts: input.texts } };
    return { ...base, modelOutput: { embedding: embed(text), inputTextTokenCount: wordCount(text) } };
  }
  if (lastUserText(input).includes('[record-error]')) {
    return { ...base, error: { errorCode: 400, errorMessage: 'messages: text content blocks must be non-empty' } };
  }
  if (model.includes('anthropic.claude')) {
    if (input.anthropic_version !== 'bedrock-2023-05-31' || typeof input.max_tokens !== 'number' || 'model' in input) {
      return { ...base, error: { errorCode: 400, errorMessage: 'anthropic_version bedrock-2023-05-31 and max_tokens are required; model is not allowed' } };
    }
    const conv = anthropicConversation(input, model);
    const a = answer(conv);
    const content = a.kind === 'text' ? [{ type: 'text', text: a.text }] : [{ type: 'tool_use', id: `toolu_${a.idSuffix}`, name: a.name, input: a.args }];
    const stop = a.kind === 'tool' ? 'tool_use' : a.finish === 'length' ? 'max_tokens' : 'end_turn';
    return {
      ...base,
      modelOutput: {
        id: `msg_bdrk_batch${n}`,
        type: 'message',
        role: 'assistant',
        model,
        content,
        stop_reason: stop,
        stop_sequence: null,
        usage: { input_tokens: promptTokens(conv), output_tokens: a.completionTokens },
      },
    };
  }
  if (input.schemaVersion !== 'messages-v1') return { ...base, error: { errorCode: 400, errorMessage: 'schemaVersion messages-v1 is required' } };
  const conv = bedrockConversation(input, model);
  const a = answer(conv);
  const content = a.kind === 'text' ? [{ text: a.text }] : [{ toolUse: { toolUseId: `tooluse_${a.idSuffix}`, name: a.name, input: a.args } }];
  const prompt = promptTokens(conv);
  return {
    ...base,
    modelOutput: {
      output: { message: { role: 'assistant', content } },
      stopReason: a.kind === 'tool' ? 'tool_use' : a.finish === 'length' ? 'max_tokens' : 'end_turn',
      usage: { inputTokens: prompt, outputTokens: a.completionTokens, totalTokens: prompt + a.completionTokens },
    },
  };
}

const ENDED = new Set(['Completed', 'PartiallyCompleted', 'Failed', 'Stopped', 'Expired']);

export async function startBedrockBatchFake(o: BedrockBatchFakeOptions): Promise<BedrockBatchFake> {
  const objects = new Map<string, Buffer>();
  const jobs: FakeJob[] = [];

  const writeOutput = (job: FakeJob) => {
    const ran = job.records.slice(0, job.ran).map((r, i) => runRecord(job, r, i + 1));
    const inputName = job.inputUri.slice(job.inputUri.lastIndexOf('/') + 1);
    const out = s3Key(job.outputUri).replace(/\/?$/, '/');
    const jobId = job.jobArn.slice(job.jobArn.lastIndexOf('/') + 1);
    objects.set(`${out}${jobId}/${inputName}.out`, Buffer.from(ran.map((r) => JSON.stringify(r)).join('\n') + (ran.length ? '\n' : '')));
    const errors = ran.filter((r) => r.error).length;
    objects.set(
      `${out}${jobId}/manifest.json.out`,
      Buffer.from(
        JSON.stringify({
          totalRecordCount: job.records.length,
          processedRecordCount: ran.length,
          successRecordCount: ran.length - errors,
          errorRecordCount: errors,
        }),
      ),
    );
    return errors;
  };

  const advance = (job: FakeJob) => {
    job.polls++;
    if (ENDED.has(job.status)) return;
    if (job.status === 'Stopping') {
      job.status = 'Stopped';
      writeOutput(job);
      return;
    }
    if (o.failJob) {
      job.status = 'Failed';
      job.message = o.failJob;
      return;
    }
    if (job.status === 'Submitted') {
      job.status = 'InProgress';
      return;
    }
    job.ran = Math.min(job.records.length, job.ran + (o.recordsPerPoll ?? job.records.length));
    if (job.ran === job.records.length) job.status = writeOutput(job) ? 'PartiallyCompleted' : 'Completed';
  };

  const view = (job: FakeJob) => ({
    jobArn: job.jobArn,
    jobName: job.jobName,
    modelId: job.modelId,
    roleArn: job.roleArn,
    status: job.status,
    ...(job.message ? { message: job.message } : {}),
    submitTime: '2026-11-27T03:00:00Z',
    inputDataConfig: { s3InputDataConfig: { s3Uri: job.inputUri, s3InputFormat: 'JSONL' } },
    outputDataConfig: { s3OutputDataConfig: { s3Uri: job.outputUri } },
    timeoutDurationInHours: 24,
  });

  const control = (ex: Exchange) => {
    const { rec } = ex;
    if (rec.method === 'POST' && rec.path === '/model-invocation-job') {
      const b = obj(rec.body);
      const token = str(b.clientRequestToken);
      const again = token && jobs.find((j) => j.token === token);
      if (again) return ex.json(200, { jobArn: again.jobArn });
      const jobName = str(b.jobName) ?? '';
      if (!/^[a-zA-Z0-9](-*[a-zA-Z0-9+\-.])*$/.test(jobName) || jobName.length > 63) return ex.error(400, `Invalid jobName '${jobName}'`);
      const roleArn = str(b.roleArn) ?? '';
      if (!/^arn:aws(-[^:]+)?:iam::\d{12}:role\/.+$/.test(roleArn)) return ex.error(400, 'Invalid roleArn');
      const inputUri = str(obj(obj(b.inputDataConfig).s3InputDataConfig).s3Uri) ?? '';
      const outputUri = str(obj(obj(b.outputDataConfig).s3OutputDataConfig).s3Uri) ?? '';
      const input = objects.get(s3Key(inputUri));
      if (!input) return ex.error(400, `The input S3 object ${inputUri} does not exist or the role cannot read it.`);
      if (!outputUri.startsWith('s3://')) return ex.error(400, 'outputDataConfig.s3OutputDataConfig.s3Uri is required');
      const modelId = str(b.modelId) ?? '';
      const records = input
        .toString('utf8')
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as FakeJob['records'][number]);
      const jobArn = `arn:aws:bedrock:${o.region ?? 'us-east-1'}:123456789012:model-invocation-job/fakejob${String(jobs.length + 1).padStart(4, '0')}`;
      jobs.push({ jobArn, jobName, modelId, roleArn, token, inputUri, outputUri, status: 'Submitted', records, ran: 0, polls: 0 });
      return ex.json(200, { jobArn });
    }
    const m = /^\/model-invocation-job\/([^/]+)(\/stop)?$/.exec(rec.path);
    const job = m && jobs.find((j) => j.jobArn === decodeURIComponent(m[1]!));
    if (!m) return ex.error(404, `Unknown operation ${rec.method} ${rec.path}`, 'UnknownOperationException');
    if (!job) return ex.error(404, `Could not find job ${decodeURIComponent(m[1]!)}`, 'ResourceNotFoundException');
    if (rec.method === 'GET' && !m[2]) {
      advance(job);
      return ex.json(200, view(job));
    }
    if (rec.method === 'POST' && m[2]) {
      if (ENDED.has(job.status) || job.status === 'Stopping') return ex.error(400, `Job ${job.jobArn} is ${job.status} and cannot be stopped.`);
      job.status = 'Stopping';
      return ex.json(200, {});
    }
    return ex.error(404, `Unknown operation ${rec.method} ${rec.path}`, 'UnknownOperationException');
  };

  const s3 = (ex: Exchange) => {
    const { rec } = ex;
    const key = decodeURIComponent(rec.path.slice(1));
    if (rec.method === 'PUT') {
      objects.set(key, rec.rawBody);
      return ex.send({ status: 200, headers: { etag: '"fake"' } });
    }
    if (rec.method === 'DELETE') {
      objects.delete(key);
      return ex.send({ status: 204 });
    }
    const body = objects.get(key);
    if (rec.method === 'GET' && body) return ex.send({ status: 200, headers: { 'content-type': 'application/octet-stream' }, body });
    return ex.send({ status: 404, headers: { 'content-type': 'application/xml' }, body: s3Error(404, 'NoSuchKey', 'The specified key does not exist.') });
  };

  const server = await startFake('bedrock-batch', {}, bedrockBatchError, async (ex) => {
    const checked = await verify(ex.rec, o);
    if ('problem' in checked) return ex.error(403, checked.problem, 'InvalidSignatureException');
    if (!(await ex.begin(undefined, false))) return;
    return checked.service === 's3' ? s3(ex) : control(ex);
  });
  return Object.assign(server, { objects, jobs });
}
