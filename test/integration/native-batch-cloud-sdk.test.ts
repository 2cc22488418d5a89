/**
 * Native batches on Bedrock and Vertex AI through the official openai SDK: files.create ->
 * batches.create (x-gateway-batch-mode: native, a managed provider with its batch bucket
 * settings) -> retrieve until done -> files.content, against the fakes of both control
 * planes and their buckets. Each answered line is logged with the batch id, priced at half
 * the list price; a cancel stops the provider's job; a failed job fails the batch.
 */
process.env.GATEWAY_BATCH_POLL_SECONDS = '0';
process.env.GATEWAY_BATCH_POLL_MAX_SECONDS = '1';

import OpenAI, { toFile } from 'openai';
import type { Batch } from 'openai/resources/batches';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startBedrockBatchFake, type BedrockBatchFake } from '../fakes/bedrock-batch';
import { startVertexBatchFake, type VertexBatchFake } from '../fakes/vertex-batch';
import { call, logsOf, startTestGateway } from '../support/gateway';

const CREDENTIALS = { accessKeyId: 'AKIAFAKEBATCH', secretAccessKey: 'fake-secret-for-batches' };
const TOKEN = 'ya29.fake-vertex-token';
const CLAUDE = 'anthropic.claude-3-5-haiku-20241022-v1:0';
const GEMINI = 'gemini-2.5-flash';

let gw: LocalGateway;
let bedrock: BedrockBatchFake;
let vertex: VertexBatchFake;
let failingVertex: VertexBatchFake;

beforeAll(async () => {
  [bedrock, vertex, failingVertex] = await Promise.all([
    startBedrockBatchFake({ credentials: CREDENTIALS, recordsPerPoll: 2 }),
    startVertexBatchFake({ token: TOKEN }),
    startVertexBatchFake({ token: TOKEN, failJob: 'Quota exceeded for aiplatform.googleapis.com/gemini_batch_jobs.' }),
  ]);
  gw = await startTestGateway();
  const providers = [
    {
      slug: 'bedrock-batch',
      provider: 'bedrock',
      custom_host: bedrock.url,
      aws_region: 'us-east-1',
      aws_access_key_id: CREDENTIALS.accessKeyId,
      aws_secret_access_key: CREDENTIALS.secretAccessKey,
      aws_batch_s3_uri: 's3://gateway-batches/runs/',
      aws_batch_role_arn: 'arn:aws:iam::123456789012:role/gateway-bedrock-batch',
      aws_s3_endpoint: bedrock.url,
    },
    ...[
      ['vertex-batch', vertex],
      ['vertex-failing', failingVertex],
    ].map(([slug, fake]) => ({
      slug,
      provider: 'vertex-ai',
      api_key: TOKEN,
      custom_host: `${(fake as VertexBatchFake).url}/v1`,
      vertex_project_id: 'my-project',
      vertex_region: 'us-central1',
      vertex_batch_gcs_uri: 'gs://gateway-batches/vertex',
      vertex_storage_endpoint: (fake as VertexBatchFake).url,
    })),
  ];
  for (const body of providers) {
    const created = await call(gw, 'POST', '/v1/providers', { body });
    expect(created.status, created.text).toBe(200);
  }
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all([bedrock?.close(), vertex?.close(), failingVertex?.close()]);
});

const client = (provider: string) =>
  new OpenAI({
    baseURL: gw.baseUrl,
    apiKey: 'unused-placeholder',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': provider, 'x-gateway-batch-mode': 'native' },
  });

const chatLine = (id: string, model: string, text: string) =>
  JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model, messages: [{ role: 'user', content: text }], max_tokens: 40 } });

async function runBatch(openai: OpenAI, lines: string[]): Promise<Batch> {
  const file = await openai.files.create({ file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'input.jsonl'), purpose: 'batch' });
  return openai.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
}

async function until(openai: OpenAI, id: string, statuses: string[], timeoutMs = 30_000): Promise<Batch> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const batch = await openai.batches.retrieve(id);
    if (statuses.includes(batch.status)) return batch;
    if (Date.now() > deadline) throw new Error(`batch ${id} still ${batch.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

interface OutputLine {
  custom_id: string | null;
  response: { status_code: number; request_id: string; body: any } | null;
  error: { code: string; message: string } | null;
}

async function linesOf(openai: OpenAI, fileId: string | null | undefined): Promise<OutputLine[]> {
  if (!fileId) return [];
  const text = await (await openai.files.content(fileId)).text();
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as OutputLine);
}

describe('native batches on Bedrock', () => {
  it('runs as a model invocation job: output translated to chat completions, record errors and other models in the error file, lines logged at half price', async () => {
    const openai = client('@bedrock-batch');
    const created = await runBatch(openai, [
      chatLine('a', CLAUDE, 'hello bedrock'),
      chatLine('b', CLAUDE, 'broken [record-error]'),
      chatLine('c', 'amazon.nova-lite-v1:0', 'another model'),
      chatLine('d', CLAUDE, 'goodbye bedrock'),
    ]);
    const done = await until(openai, created.id, ['completed', 'failed']);
    expect(done.status, JSON.stringify(done.errors)).toBe('completed');
    expect(done.request_counts).toEqual({ total: 4, completed: 2, failed: 2 });

    const job = bedrock.jobs.find((j) => j.token === created.id)!;
    expect(job).toMatchObject({ modelId: CLAUDE, roleArn: 'arn:aws:iam::123456789012:role/gateway-bedrock-batch' });
    expect(job.records.map((r) => r.recordId)).toEqual(['L0000000001', 'L0000000002', 'L0000000004']);

    const output = await linesOf(openai, done.output_file_id);
    expect(output.map((l) => l.custom_id)).toEqual(['a', 'd']);
    expect(output[0]!.response).toMatchObject({
      status_code: 200,
      body: {
        object: 'chat.completion',
        choices: [{ message: { role: 'assistant', content: 'echo: hello bedrock' } }],
        usage: { prompt_tokens: 2, completion_tokens: 3 },
      },
    });
    const errors = await linesOf(openai, done.error_file_id);
    expect(errors.map((l) => [l.custom_id, l.response?.status_code ?? l.error?.code])).toEqual([
      ['b', 400],
      ['c', 'mismatched_model'],
    ]);

    for (const line of output) {
      const logs = await logsOf(gw, `trace_id=${(line.response as { request_id: string }).request_id}`);
      expect(logs.status, logs.text).toBe(200);
      expect(logs.body.data[0]).toMatchObject({
        provider: 'bedrock',
        model: CLAUDE,
        metadata: { batch_id: created.id, batch_mode: 'native' },
        batch_discount: 0.5,
      });
      // Claude 3.5 Haiku lists at $0.80 / $4 per million tokens: 2 in + 3 out = $0.0000136, half of it.
      expect(logs.body.data[0].cost_usd).toBeCloseTo(0.0000068, 10);
    }
  });

  it('a cancel stops the job at Bedrock; the batch ends cancelled within seconds', async () => {
    const openai = client('@bedrock-batch');
    const created = await runBatch(
      openai,
      [1, 2, 3, 4, 5, 6].map((n) => chatLine(`x${n}`, CLAUDE, `line ${n}`)),
    );
    await until(openai, created.id, ['in_progress']);
    for (let i = 0; i < 40 && !bedrock.jobs.some((j) => j.token === created.id); i++) await new Promise((r) => setTimeout(r, 100));
    const cancelling = await openai.batches.cancel(created.id);
    expect(['cancelling', 'cancelled']).toContain(cancelling.status);
    const started = Date.now();
    const done = await until(openai, created.id, ['cancelled', 'completed', 'failed'], 15_000);
    expect(done.status).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(bedrock.jobs.find((j) => j.token === created.id)?.status).toBe('Stopped');
  });
});

describe('native batches on Vertex AI', () => {
  it('runs as a batch prediction job: predictions matched to their lines and translated, errors in the error file', async () => {
    const openai = client('@vertex-batch');
    const created = await runBatch(openai, [
      chatLine('q1', GEMINI, 'first question'),
      chatLine('q2', GEMINI, 'second [record-error]'),
      chatLine('q3', GEMINI, 'third question'),
    ]);
    const done = await until(openai, created.id, ['completed', 'failed']);
    expect(done.status, JSON.stringify(done.errors)).toBe('completed');
    expect(done.request_counts).toEqual({ total: 3, completed: 2, failed: 1 });
    const output = await linesOf(openai, done.output_file_id);
    expect(output.map((l) => [l.custom_id, l.response?.body.choices[0].message.content])).toEqual([
      ['q1', 'echo: first question'],
      ['q3', 'echo: third question'],
    ]);
    const errors = await linesOf(openai, done.error_file_id);
    expect(errors.map((l) => [l.custom_id, l.response?.status_code])).toEqual([['q2', 400]]);
    const logs = await logsOf(gw, `trace_id=${(output[0]!.response as { request_id: string }).request_id}`);
    expect(logs.body.data[0]).toMatchObject({ provider: 'vertex-ai', model: GEMINI, metadata: { batch_id: created.id }, batch_discount: 0.5 });
    // Gemini 2.5 Flash lists at $0.30 / $2.50 per million tokens: 2 in + 3 out = $0.0000081, half of it.
    expect(logs.body.data[0].cost_usd).toBeCloseTo(0.00000405, 10);
  });

  it('a job that fails at Vertex fails the batch with the provider message', async () => {
    const openai = client('@vertex-failing');
    const created = await runBatch(openai, [chatLine('f1', GEMINI, 'anything')]);
    const done = await until(openai, created.id, ['failed', 'completed']);
    expect(done.status).toBe('failed');
    expect(done.errors?.data?.[0]?.message).toContain('Quota exceeded');
  });
});
