import OpenAI, { BadRequestError, toFile } from 'openai';
import type { Batch } from 'openai/resources/batches';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { anthropicMessageBatches } from '../../functions/batches/native/anthropic';
import { openaiBatches } from '../../functions/batches/native/openai';
import type { LocalGateway } from '../../infra/local/server';
import { startBatchApiFake, type BatchApiFake } from '../fakes/batch-api';
import { call, startTestGateway } from '../support/gateway';

// Native batch mode (x-gateway-batch-mode: native): the batch handed to the provider's own
// batch API (fakes of OpenAI's Files + Batches and Anthropic's Message Batches), polled until
// it ends, its results written back in OpenAI's format, each line logged at the batch discount.
let gw: LocalGateway;
let fake: BatchApiFake;

beforeAll(async () => {
  fake = await startBatchApiFake();
  gw = await startTestGateway({ env: { GATEWAY_BATCH_POLL_SECONDS: '0', GATEWAY_BATCH_POLL_MAX_SECONDS: '1' } });
  for (const [slug, provider] of [
    ['native-openai', 'openai'],
    ['native-claude', 'anthropic'],
    ['native-groq', 'groq'],
  ] as const) {
    const created = await call(gw, 'POST', '/v1/providers', { body: { slug, provider, api_key: 'sk-managed', custom_host: `${fake.url}/v1` } });
    expect(created.status, created.text).toBe(200);
  }
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});
afterEach(() => {
  fake.reset();
  Object.assign(fake.knobs, { steps: 3, failJobs: false, hold: false });
});

const client = (provider: string, headers: Record<string, string> = {}) =>
  new OpenAI({
    baseURL: gw.baseUrl,
    apiKey: 'unused-placeholder',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': provider, ...headers },
  });
const NATIVE = { headers: { 'x-gateway-batch-mode': 'native' } };

const chatLine = (id: string, model: string, text = `say ${id}`) =>
  JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model, messages: [{ role: 'user', content: text }] } });

async function upload(openai: OpenAI, lines: string[]) {
  return openai.files.create({ file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'input.jsonl'), purpose: 'batch' });
}

async function until(openai: OpenAI, id: string, done: (b: Batch) => boolean, timeoutMs = 60_000): Promise<Batch> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const batch = await openai.batches.retrieve(id);
    if (done(batch)) return batch;
    if (Date.now() > deadline) throw new Error(`batch ${id} still ${batch.status} after ${timeoutMs} ms: ${JSON.stringify(batch.request_counts)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
const ended = (b: Batch) => ['completed', 'failed', 'expired', 'cancelled'].includes(b.status);

async function text(openai: OpenAI, fileId: string | null | undefined): Promise<string> {
  return fileId ? (await openai.files.content(fileId)).text() : '';
}
const parsed = (jsonl: string) =>
  jsonl
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

/** The request-log records of a batch (newest first). */
async function batchLogs(batchId: string, count: number) {
  for (let i = 0; ; i++) {
    const logs = await call(gw, 'GET', '/v1/logs?limit=100');
    const mine = (logs.body.data as any[]).filter((r) => r.metadata?.batch_id === batchId);
    if (mine.length >= count || i > 50) return mine;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The fake's OpenAI job of a gateway batch (the gateway keeps its batch id in the job's metadata). */
const jobOf = (batchId: string) => [...fake.jobs.values()].find((j) => (j.metadata as { gateway_batch_id?: string } | null)?.gateway_batch_id === batchId)!;

describe('native batches on OpenAI', () => {
  it('round trip: the provider output files come back line for line; bad lines are error lines; each line is logged at the batch discount', async () => {
    const openai = client('@native-openai');
    const input = await upload(openai, [chatLine('a', 'gpt-4o-mini'), 'not json', chatLine('b', 'gpt-4o-mini', 'FAIL me'), chatLine('c', 'gpt-4o')]);
    const created = await openai.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' }, NATIVE);
    expect(created.status).toBe('validating');
    const batch = await until(openai, created.id, ended);
    expect(batch.status).toBe('completed');
    expect(batch.request_counts).toEqual({ total: 4, completed: 1, failed: 3 });

    const job = jobOf(batch.id);
    expect(job.metadata).toEqual({ gateway_batch_id: batch.id });
    expect(job.requests.map(([id]) => id)).toEqual(['a', 'b']); // the bad line and the other model's line were never sent
    expect(await text(openai, batch.output_file_id)).toBe(fake.fileText(job.outputFileId!));
    const errors = parsed(await text(openai, batch.error_file_id));
    expect(errors.map((l) => l.custom_id)).toEqual([null, 'b', 'c']);
    expect(errors[0].error.code).toBe('invalid_json_line');
    expect(JSON.stringify(errors[1])).toBe(fake.fileText(job.errorFileId!)!.trim());
    expect(errors[2].error.code).toBe('mismatched_model');

    const logs = await batchLogs(batch.id, 2);
    expect(logs).toHaveLength(2);
    for (const record of logs) expect(record.metadata).toMatchObject({ batch_id: batch.id, batch_mode: 'native' });
    const answered = logs.find((r) => r.status === 200)!;
    expect(answered.provider).toBe('openai');
    // The same line live (gateway mode pays the list price): the native line costs the discounted price.
    const live = await call(gw, 'POST', '/v1/chat/completions', {
      headers: { 'x-gateway-provider': '@native-openai' },
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'say a' }] },
    });
    expect(live.status, live.text).toBe(200);
    const listPrice = Number(live.headers.get('x-gateway-cost'));
    expect(listPrice).toBeGreaterThan(0);
    expect(answered.cost_usd).toBeCloseTo(listPrice * (1 - openaiBatches.batchDiscount), 9);
  });

  it('cancel stops the provider job; the lines it answered are kept', async () => {
    fake.knobs.hold = true;
    const openai = client('@native-openai');
    const input = await upload(
      openai,
      ['a', 'b', 'c', 'd'].map((id) => chatLine(id, 'gpt-4o-mini')),
    );
    const created = await openai.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' }, NATIVE);
    await until(openai, created.id, (b) => b.status === 'in_progress');
    const cancelling = await openai.batches.cancel(created.id);
    expect(cancelling.status).toBe('cancelling');
    const job = jobOf(created.id);
    expect(job.cancelled).toBe(true);
    const batch = await until(openai, created.id, ended);
    expect(batch.status).toBe('cancelled');
    expect(parsed(await text(openai, batch.output_file_id)).map((l) => l.custom_id)).toEqual(['a', 'b']);
  });

  it('a provider job that fails fails the batch with the provider errors', async () => {
    fake.knobs.failJobs = true;
    const openai = client('@native-openai');
    const input = await upload(openai, [chatLine('a', 'gpt-4o-mini')]);
    const created = await openai.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' }, NATIVE);
    const batch = await until(openai, created.id, ended);
    expect(batch.status).toBe('failed');
    expect(batch.errors?.data?.[0]).toMatchObject({ code: 'invalid_model', message: 'The model does not support batches.' });
  });

  it('a provider that is down during polls is polled again, not failed', async () => {
    fake.knobs.steps = 2;
    const openai = client('@native-openai');
    const input = await upload(openai, [chatLine('a', 'gpt-4o-mini')]);
    const created = await openai.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' }, NATIVE);
    await until(openai, created.id, (b) => b.status === 'in_progress');
    fake.setBehaviour({ status: 503, times: 3 });
    const batch = await until(openai, created.id, ended);
    expect(batch.status).toBe('completed');
    expect(fake.count((r) => r.path.startsWith('/v1/batches/'))).toBeGreaterThanOrEqual(5);
    expect(parsed(await text(openai, batch.output_file_id)).map((l) => l.custom_id)).toEqual(['a']);
  });
});

describe('native batches on Anthropic', () => {
  it('round trip: chat lines become Message Batches requests, results come back as chat completions at the batch discount', async () => {
    const openai = client('@native-claude');
    const input = await upload(openai, [chatLine('first', 'claude-3-5-haiku-latest', 'hello'), chatLine('second', 'claude-3-5-haiku-latest', 'FAIL')]);
    const created = await openai.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' }, NATIVE);
    const batch = await until(openai, created.id, ended);
    expect(batch.status).toBe('completed');
    expect(batch.request_counts).toEqual({ total: 2, completed: 1, failed: 1 });
    const job = [...fake.jobs.values()].filter((j) => j.kind === 'anthropic').at(-1)!;
    expect(job.requests.map(([id]) => id)).toEqual(['L0000000001', 'L0000000002']);
    // The live path's translation: Anthropic's Messages request, with the max_tokens it requires.
    expect(job.requests[0]![1]).toMatchObject({ model: 'claude-3-5-haiku-latest', messages: [{ role: 'user', content: 'hello' }] });
    expect(job.requests[0]![1].max_tokens).toEqual(expect.any(Number));
    const [out] = parsed(await text(openai, batch.output_file_id));
    expect(out.custom_id).toBe('first');
    expect(out.response.status_code).toBe(200);
    expect(out.response.body).toMatchObject({
      object: 'chat.completion',
      choices: [{ message: { role: 'assistant', content: 'answer of hello' }, finish_reason: 'stop' }],
    });
    expect(out.response.body.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 5 });
    const [err] = parsed(await text(openai, batch.error_file_id));
    expect(err).toMatchObject({ custom_id: 'second', response: { status_code: 400, body: { error: { message: 'Bad line.' } } } });

    const logs = await batchLogs(batch.id, 2);
    const answered = logs.find((r) => r.status === 200)!;
    expect(answered).toMatchObject({
      provider: 'anthropic',
      metadata: { batch_id: batch.id, batch_mode: 'native' },
      batch_discount: anthropicMessageBatches.batchDiscount,
    });
    expect(answered.trace_id).toBe(out.response.request_id);
  });
});

describe('asking for native mode', () => {
  const create = async (provider: string, headers: Record<string, string>, endpoint = '/v1/chat/completions') => {
    const openai = client(provider);
    const input = await upload(openai, [chatLine('a', 'gpt-4o-mini')]);
    return openai.batches
      .create({ input_file_id: input.id, endpoint: endpoint as '/v1/chat/completions', completion_window: '24h' }, { headers })
      .catch((e: unknown) => e);
  };

  it('refuses an unknown mode, a config with targets, a provider without a batch API and an endpoint its batch API lacks (400s naming the field)', async () => {
    const jobsBefore = fake.jobs.size;
    const bad = (await create('@native-openai', { 'x-gateway-batch-mode': 'turbo' })) as BadRequestError;
    expect(bad).toBeInstanceOf(BadRequestError);
    expect(bad.param).toBe('x-gateway-batch-mode');

    const config = JSON.stringify({ strategy: { mode: 'fallback' }, targets: [{ provider: '@native-openai' }, { provider: '@native-claude' }] });
    // The file is uploaded to the gateway (a config with the upload would send it to the provider's own Files API).
    const openai = new OpenAI({ baseURL: gw.baseUrl, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': gw.adminKey } });
    const input = await upload(client('@native-openai'), [chatLine('a', 'gpt-4o-mini')]);
    const fallback = (await openai.batches
      .create(
        { input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' },
        { headers: { ...NATIVE.headers, 'x-gateway-config': config } },
      )
      .catch((e: unknown) => e)) as BadRequestError;
    expect(fallback).toBeInstanceOf(BadRequestError);
    expect(fallback.param).toBe('x-gateway-config');
    expect(fallback.code).toBe('native_batch_needs_one_provider');

    const groq = (await create('@native-groq', NATIVE.headers)) as BadRequestError;
    expect(groq).toBeInstanceOf(BadRequestError);
    expect(groq.code).toBe('native_batch_unsupported');
    expect(groq.message).toContain("'groq'");

    const embeddings = (await create('@native-claude', NATIVE.headers, '/v1/embeddings')) as BadRequestError;
    expect(embeddings).toBeInstanceOf(BadRequestError);
    expect(embeddings.code).toBe('native_batch_unsupported');
    expect(fake.jobs.size).toBe(jobsBefore);
  });
});
