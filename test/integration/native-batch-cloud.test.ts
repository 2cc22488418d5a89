/**
 * The Bedrock and Vertex AI native batch adapters against fakes that speak the real wire
 * formats (test/fakes/bedrock-batch.ts, vertex-batch.ts), over HTTP through the gateway's
 * outbound client: prepare -> submit -> poll until the job ends -> results, stop/cancel, a
 * failed job, a submit that runs again. The whole batch lifecycle through the API is
 * covered with the framework's own tests.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

process.env.GATEWAY_TRUSTED_HOSTS = '127.0.0.1,localhost';

const { bedrockBatch } = await import('../../functions/batches/native/bedrock');
const { vertexBatch } = await import('../../functions/batches/native/vertex');
const { nativeBatchAdapter } = await import('../../functions/batches/native/registry');
const { getAdapter } = await import('../../functions/providers/registry');
const { startBedrockBatchFake } = await import('../fakes/bedrock-batch');
const { startVertexBatchFake } = await import('../fakes/vertex-batch');

import type { BatchEndpoint } from '../../functions/batches/types';
import type { NativeBatchAdapter, NativeBatchContext, NativeJobRef, NativeLineResult, SubmitLine } from '../../functions/batches/native/types';
import type { ProviderTarget } from '../../functions/providers/types';
import type { BedrockBatchFake } from '../fakes/bedrock-batch';
import type { VertexBatchFake } from '../fakes/vertex-batch';

const CREDENTIALS = { accessKeyId: 'AKIAFAKEBATCH', secretAccessKey: 'fake-secret-for-batches' };
const ROLE = 'arn:aws:iam::123456789012:role/gateway-bedrock-batch';
const TOKEN = 'ya29.fake-vertex-token';

let bedrock: BedrockBatchFake;
let vertex: VertexBatchFake;

beforeAll(async () => {
  bedrock = await startBedrockBatchFake({ credentials: CREDENTIALS, recordsPerPoll: 2 });
  vertex = await startVertexBatchFake({ token: TOKEN });
});
afterAll(async () => {
  await bedrock?.close();
  await vertex?.close();
});

const bedrockTarget = (over: Partial<NonNullable<ProviderTarget['aws']>> = {}): ProviderTarget => ({
  provider: 'bedrock',
  customHost: bedrock.url,
  aws: {
    region: 'us-east-1',
    accessKeyId: CREDENTIALS.accessKeyId,
    secretAccessKey: CREDENTIALS.secretAccessKey,
    batchS3Uri: 's3://gateway-batches/runs',
    batchRoleArn: ROLE,
    s3Endpoint: bedrock.url,
    ...over,
  },
});

const vertexTarget = (over: Partial<NonNullable<ProviderTarget['vertex']>> = {}): ProviderTarget => ({
  provider: 'vertex-ai',
  apiKey: TOKEN,
  customHost: `${vertex.url}/v1`,
  vertex: { projectId: 'my-project', region: 'us-central1', batchGcsUri: 'gs://gateway-batches/vertex', storageEndpoint: vertex.url, ...over },
});

let batchSeq = 0;
async function contextFor(target: ProviderTarget, endpoint: BatchEndpoint = '/v1/chat/completions'): Promise<NativeBatchContext> {
  const adapter = (await getAdapter(target.provider))!;
  batchSeq++;
  return {
    workspaceId: 'ws_test',
    batchId: `batch_${String(batchSeq).padStart(26, '0')}`,
    endpoint,
    provider: { adapter, target },
    signal: new AbortController().signal,
  };
}

const chat = (model: string, text: string) => ({ model, messages: [{ role: 'user', content: text }], max_tokens: 50 });

async function* submitLines(adapter: NativeBatchAdapter, ctx: NativeBatchContext, bodies: Array<Record<string, unknown>>): AsyncIterable<SubmitLine> {
  for (const [i, body] of bodies.entries()) {
    const prepared = adapter.prepare(ctx, { line: i + 1, customId: `req-${i + 1}`, body });
    if (!prepared.ok) throw new Error(prepared.message);
    yield { line: i + 1, customId: `req-${i + 1}`, model: prepared.model, payload: prepared.payload };
  }
}

async function pollUntilEnded(adapter: NativeBatchAdapter, ctx: NativeBatchContext, job: NativeJobRef, maxPolls = 20) {
  const seen: string[] = [];
  for (let i = 0; i < maxPolls; i++) {
    const state = await adapter.poll(ctx, job);
    seen.push(state.providerStatus);
    if (state.status !== 'in_progress' && state.status !== 'cancelling') return { state, seen };
  }
  throw new Error(`job did not end: ${seen.join(' ')}`);
}

async function resultsOf(adapter: NativeBatchAdapter, ctx: NativeBatchContext, job: NativeJobRef): Promise<NativeLineResult[]> {
  const out: NativeLineResult[] = [];
  for await (const r of adapter.results({ ...ctx, lineOf: () => undefined, customIdOf: (l) => `req-${l}` }, job)) out.push(r);
  return out.sort((a, b) => a.line - b.line);
}

describe('the registry', () => {
  it('serves Bedrock chat and embeddings batches and Vertex AI chat batches natively, at half price', () => {
    expect(nativeBatchAdapter('bedrock', '/v1/chat/completions')).toBe(bedrockBatch);
    expect(nativeBatchAdapter('bedrock', '/v1/embeddings')).toBe(bedrockBatch);
    expect(nativeBatchAdapter('vertex-ai', '/v1/chat/completions')).toBe(vertexBatch);
    expect(nativeBatchAdapter('vertex-ai', '/v1/embeddings')).toBeUndefined();
    expect([bedrockBatch.batchDiscount, vertexBatch.batchDiscount]).toEqual([0.5, 0.5]);
  });
});

describe('Bedrock model invocation jobs', () => {
  const CLAUDE = 'anthropic.claude-3-5-haiku-20241022-v1:0';

  it('uploads the records to S3, runs the job as the service role, and reads every record back as a chat completion', async () => {
    const ctx = await contextFor(bedrockTarget());
    const bodies = [chat(CLAUDE, 'hello one'), chat(CLAUDE, 'hello two [record-error]'), chat(CLAUDE, 'hello three')];
    const job = await bedrockBatch.submit(ctx, submitLines(bedrockBatch, ctx, bodies));

    const input = bedrock.objects
      .get(`gateway-batches/runs/${ctx.batchId}/input.jsonl`)!
      .toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(input[0]).toEqual({
      recordId: 'L0000000001',
      modelInput: { anthropic_version: 'bedrock-2023-05-31', max_tokens: 50, messages: [{ role: 'user', content: 'hello one' }] },
    });
    const created = bedrock.jobs.find((j) => j.jobArn === job.id)!;
    expect(created).toMatchObject({ roleArn: ROLE, modelId: CLAUDE, outputUri: `s3://gateway-batches/runs/${ctx.batchId}/output/` });

    const { state, seen } = await pollUntilEnded(bedrockBatch, ctx, job);
    expect(seen).toEqual(['InProgress', 'InProgress', 'PartiallyCompleted']);
    expect(state.status).toBe('completed');

    const results = await resultsOf(bedrockBatch, ctx, job);
    expect(results.map((r) => [r.line, r.response?.status_code])).toEqual([
      [1, 200],
      [2, 400],
      [3, 200],
    ]);
    expect(results[0]!.response!.body).toMatchObject({
      object: 'chat.completion',
      model: CLAUDE,
      choices: [{ message: { role: 'assistant', content: 'echo: hello one' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 2, completion_tokens: 3 },
    });
    expect(results[0]!.usage).toMatchObject({ prompt_tokens: 2, completion_tokens: 3 });
    expect(results[1]!.response!.body).toEqual({
      error: { message: 'messages: text content blocks must be non-empty', type: 'invalid_request_error', param: null, code: 'provider_record_error' },
    });
  });

  it('a submit that runs again (its answer lost) gets the same job, by the idempotency token', async () => {
    const ctx = await contextFor(bedrockTarget());
    const first = await bedrockBatch.submit(ctx, submitLines(bedrockBatch, ctx, [chat(CLAUDE, 'once')]));
    const again = await bedrockBatch.submit(ctx, submitLines(bedrockBatch, ctx, [chat(CLAUDE, 'once')]));
    expect(again.id).toBe(first.id);
    expect(bedrock.jobs.filter((j) => j.token === ctx.batchId)).toHaveLength(1);
  });

  it('translates Nova chat and Titan embeddings records both ways', async () => {
    const nova = await contextFor(bedrockTarget());
    const novaJob = await bedrockBatch.submit(nova, submitLines(bedrockBatch, nova, [{ ...chat('amazon.nova-lite-v1:0', 'hi nova'), temperature: 0.2 }]));
    const novaInput = JSON.parse(bedrock.objects.get(`gateway-batches/runs/${nova.batchId}/input.jsonl`)!.toString('utf8'));
    expect(novaInput.modelInput).toEqual({
      schemaVersion: 'messages-v1',
      messages: [{ role: 'user', content: [{ text: 'hi nova' }] }],
      inferenceConfig: { max_new_tokens: 50, temperature: 0.2 },
    });
    await pollUntilEnded(bedrockBatch, nova, novaJob);
    const [novaAnswer] = await resultsOf(bedrockBatch, nova, novaJob);
    expect(novaAnswer!.response!.body).toMatchObject({
      choices: [{ message: { content: 'echo: hi nova' } }],
      usage: { prompt_tokens: 2, completion_tokens: 3 },
    });

    const titan = await contextFor(bedrockTarget(), '/v1/embeddings');
    const titanJob = await bedrockBatch.submit(titan, submitLines(bedrockBatch, titan, [{ model: 'amazon.titan-embed-text-v2:0', input: 'embed me' }]));
    await pollUntilEnded(bedrockBatch, titan, titanJob);
    const [vector] = await resultsOf(bedrockBatch, titan, titanJob);
    expect(vector!.response!.body).toMatchObject({ object: 'list', data: [{ object: 'embedding', index: 0 }], usage: { prompt_tokens: 2 } });
  });

  it('a stopped job answers the records it ran, and stopping an ended job is no error', async () => {
    const ctx = await contextFor(bedrockTarget());
    const bodies = [1, 2, 3, 4, 5].map((n) => chat(CLAUDE, `line ${n}`));
    const job = await bedrockBatch.submit(ctx, submitLines(bedrockBatch, ctx, bodies));
    await bedrockBatch.poll(ctx, job); // InProgress
    await bedrockBatch.poll(ctx, job); // two records ran
    await bedrockBatch.cancel(ctx, job);
    const { state } = await pollUntilEnded(bedrockBatch, ctx, job);
    expect(state).toMatchObject({ status: 'cancelled', providerStatus: 'Stopped' });
    expect((await resultsOf(bedrockBatch, ctx, job)).map((r) => r.line)).toEqual([1, 2]);
    await expect(bedrockBatch.cancel(ctx, job)).resolves.toBeUndefined();
  });

  it('a failed job fails with its message and has no results', async () => {
    const failing = await startBedrockBatchFake({ credentials: CREDENTIALS, failJob: 'The role cannot read the input bucket.' });
    try {
      const ctx = await contextFor({ ...bedrockTarget({ s3Endpoint: failing.url }), customHost: failing.url });
      const job = await bedrockBatch.submit(ctx, submitLines(bedrockBatch, ctx, [chat(CLAUDE, 'x')]));
      const { state } = await pollUntilEnded(bedrockBatch, ctx, job);
      expect(state).toMatchObject({
        status: 'failed',
        errors: [{ code: 'provider_job_failed', message: expect.stringContaining('The role cannot read the input bucket.') }],
      });
      expect(await resultsOf(bedrockBatch, ctx, job)).toEqual([]);
    } finally {
      await failing.close();
    }
  });

  it('a line for a model family it cannot batch is an error line naming the line; a missing bucket or role is a permanent refusal', async () => {
    const ctx = await contextFor(bedrockTarget());
    expect(bedrockBatch.prepare(ctx, { line: 7, customId: 'x', body: chat('meta.llama3-70b-instruct-v1:0', 'hi') })).toMatchObject({
      ok: false,
      code: 'unsupported_model',
      message: expect.stringMatching(/^Line 7 \(body\.model\): Native Bedrock batches take/),
    });
    const noBucket = await contextFor(bedrockTarget({ batchS3Uri: undefined }));
    await expect(bedrockBatch.submit(noBucket, submitLines(bedrockBatch, noBucket, [chat(CLAUDE, 'x')]))).rejects.toMatchObject({
      name: 'NativeBatchRejected',
      message: expect.stringContaining('x-gateway-aws-batch-s3-uri'),
    });
    const noRole = await contextFor(bedrockTarget({ batchRoleArn: 'not-an-arn' }));
    await expect(bedrockBatch.submit(noRole, submitLines(bedrockBatch, noRole, [chat(CLAUDE, 'x')]))).rejects.toMatchObject({
      name: 'NativeBatchRejected',
      code: 'invalid_provider_setting',
    });
  });

  it('the S3 endpoint setting passes the SSRF guard: a metadata address is refused for good, before any byte is sent', async () => {
    const ctx = await contextFor(bedrockTarget({ s3Endpoint: 'http://169.254.169.254' }));
    await expect(bedrockBatch.submit(ctx, submitLines(bedrockBatch, ctx, [chat(CLAUDE, 'x')]))).rejects.toMatchObject({
      name: 'NativeBatchRejected',
      code: 'blocked_custom_host',
    });
  });

  it('signs S3 with the provider credentials: a wrong secret is refused by S3 and the submit fails for good', async () => {
    const ctx = await contextFor(bedrockTarget({ secretAccessKey: 'wrong' }));
    await expect(bedrockBatch.submit(ctx, submitLines(bedrockBatch, ctx, [chat(CLAUDE, 'x')]))).rejects.toMatchObject({
      name: 'NativeBatchRejected',
      status: 403,
    });
  });
});

describe('Vertex AI batch prediction jobs', () => {
  const GEMINI = 'gemini-2.5-flash';

  it('uploads the requests to Cloud Storage, runs the job, and matches each prediction to its line by key', async () => {
    const ctx = await contextFor(vertexTarget());
    const bodies = [chat(GEMINI, 'first question'), chat(GEMINI, 'second [record-error]'), chat(GEMINI, 'third question')];
    const job = await vertexBatch.submit(ctx, submitLines(vertexBatch, ctx, bodies));
    const input = vertex.objects
      .get(`gateway-batches/vertex/${ctx.batchId}/input.jsonl`)!
      .toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(input[0]).toMatchObject({
      key: 'L0000000001',
      request: { contents: [{ role: 'user', parts: [{ text: 'first question' }] }], generationConfig: { maxOutputTokens: 50 }, labels: { gateway_line: '1' } },
    });
    expect(vertex.jobs.at(-1)).toMatchObject({
      displayName: `gateway ${ctx.batchId}`,
      model: GEMINI,
      outputPrefix: `gs://gateway-batches/vertex/${ctx.batchId}/output`,
    });

    const { state, seen } = await pollUntilEnded(vertexBatch, ctx, job);
    expect(seen).toEqual(['JOB_STATE_RUNNING', 'JOB_STATE_PARTIALLY_SUCCEEDED']);
    expect(state).toMatchObject({ status: 'completed', counts: { completed: 2, failed: 1 } });

    const results = await resultsOf(vertexBatch, ctx, job);
    expect(results.map((r) => [r.line, r.response?.status_code])).toEqual([
      [1, 200],
      [2, 400],
      [3, 200],
    ]);
    expect(results[2]!.response!.body).toMatchObject({
      object: 'chat.completion',
      model: GEMINI,
      choices: [{ message: { content: 'echo: third question' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 2, completion_tokens: 3 },
    });
  });

  it('without the key in the output, lines are matched by the label Vertex echoes; results page through the bucket listing', async () => {
    const bare = await startVertexBatchFake({ token: TOKEN, echoKey: false, pageSize: 1 });
    try {
      const ctx = await contextFor(vertexTarget({ storageEndpoint: bare.url }));
      ctx.provider.target.customHost = `${bare.url}/v1`;
      const job = await vertexBatch.submit(ctx, submitLines(vertexBatch, ctx, [chat(GEMINI, 'alpha'), chat(GEMINI, 'beta')]));
      await pollUntilEnded(vertexBatch, ctx, job);
      const results = await resultsOf(vertexBatch, ctx, job);
      expect(results.map((r) => [r.line, (r.response!.body as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content])).toEqual([
        [1, 'echo: alpha'],
        [2, 'echo: beta'],
      ]);
    } finally {
      await bare.close();
    }
  });

  it('finds the job a lost create made, by its display name', async () => {
    const ctx = await contextFor(vertexTarget());
    expect(await vertexBatch.findJob!(ctx)).toBeUndefined();
    const job = await vertexBatch.submit(ctx, submitLines(vertexBatch, ctx, [chat(GEMINI, 'once')]));
    expect(await vertexBatch.findJob!(ctx)).toEqual({ id: job.id, data: { model: GEMINI } });
  });

  it('cancels a running job, and cancelling an ended job is no error', async () => {
    const ctx = await contextFor(vertexTarget());
    const job = await vertexBatch.submit(ctx, submitLines(vertexBatch, ctx, [chat(GEMINI, 'never')]));
    await vertexBatch.cancel(ctx, job);
    const { state } = await pollUntilEnded(vertexBatch, ctx, job);
    expect(state).toMatchObject({ status: 'cancelled', providerStatus: 'JOB_STATE_CANCELLED' });
    expect(await resultsOf(vertexBatch, ctx, job)).toEqual([]);
    await expect(vertexBatch.cancel(ctx, job)).resolves.toBeUndefined();
  });

  it('a failed job fails with its message; another endpoint is an error line', async () => {
    const failing = await startVertexBatchFake({ token: TOKEN, failJob: 'Quota exceeded for batch prediction.' });
    try {
      const ctx = await contextFor(vertexTarget({ storageEndpoint: failing.url }));
      ctx.provider.target.customHost = `${failing.url}/v1`;
      const job = await vertexBatch.submit(ctx, submitLines(vertexBatch, ctx, [chat(GEMINI, 'x')]));
      const { state } = await pollUntilEnded(vertexBatch, ctx, job);
      expect(state).toMatchObject({ status: 'failed', errors: [{ message: expect.stringContaining('Quota exceeded for batch prediction.') }] });
    } finally {
      await failing.close();
    }
    const embeddings = await contextFor(vertexTarget(), '/v1/embeddings');
    expect(vertexBatch.prepare(embeddings, { line: 3, customId: 'e', body: { model: 'text-embedding-004', input: 'x' } })).toMatchObject({
      ok: false,
      code: 'unsupported_endpoint',
      message: expect.stringMatching(/^Line 3/),
    });
  });
});
