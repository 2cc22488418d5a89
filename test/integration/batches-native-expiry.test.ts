import OpenAI, { toFile } from 'openai';
import type { Batch } from 'openai/resources/batches';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startBatchApiFake, type BatchApiFake } from '../fakes/batch-api';
import { call, startTestGateway } from '../support/gateway';

// A native batch whose window passes while the provider's job still runs: the gateway stops
// the job at the provider and the batch is `expired`, with the lines the provider answered.
const WINDOW_MS = 6_000;
let gw: LocalGateway;
let fake: BatchApiFake;

beforeAll(async () => {
  fake = await startBatchApiFake();
  gw = await startTestGateway({ env: { GATEWAY_BATCH_WINDOW_MS: String(WINDOW_MS), GATEWAY_BATCH_POLL_SECONDS: '0', GATEWAY_BATCH_POLL_MAX_SECONDS: '1' } });
  const created = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'held-openai', provider: 'openai', api_key: 'sk-managed', custom_host: `${fake.url}/v1` },
  });
  expect(created.status, created.text).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

it('stops the provider job when the window passes and ends expired with the answered lines', async () => {
  fake.knobs.hold = true;
  const openai = new OpenAI({
    baseURL: gw.baseUrl,
    apiKey: 'unused-placeholder',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@held-openai' },
  });
  const lines = ['a', 'b', 'c', 'd'].map((id) =>
    JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: id }] } }),
  );
  const input = await openai.files.create({ file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'input.jsonl'), purpose: 'batch' });
  const created = await openai.batches.create(
    { input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' },
    { headers: { 'x-gateway-batch-mode': 'native' } },
  );
  let batch: Batch = created;
  const deadline = Date.now() + WINDOW_MS + 30_000;
  while (!['completed', 'failed', 'expired', 'cancelled'].includes(batch.status) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    batch = await openai.batches.retrieve(created.id);
  }
  expect(batch.status).toBe('expired');
  const job = [...fake.jobs.values()][0]!;
  expect(job.cancelled).toBe(true);
  const output = (await (await openai.files.content(batch.output_file_id!)).text()).split('\n').filter(Boolean);
  expect(output.map((l) => JSON.parse(l).custom_id)).toEqual(['a', 'b']);
});
