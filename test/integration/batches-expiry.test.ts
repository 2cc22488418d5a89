import OpenAI, { toFile } from 'openai';
import type { Batch } from 'openai/resources/batches';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, startTestGateway } from '../support/gateway';

// A batch whose window (GATEWAY_BATCH_WINDOW_MS, 24 h by default) passes before its lines
// are answered: `expired`, with the lines answered so far in its output file.
// Long enough that a loaded machine has validated the batch and answered some lines in it.
const WINDOW_MS = 15_000;
let gw: LocalGateway;
let fake: FakeServer;

beforeAll(async () => {
  fake = await startOpenAIFake();
  gw = await startTestGateway({ env: { GATEWAY_BATCH_WINDOW_MS: String(WINDOW_MS) } });
  const created = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'slow-openai', provider: 'openai', api_key: 'sk-managed', custom_host: `${fake.url}/v1` },
  });
  expect(created.status, created.text).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

it('expires when its window passes, keeping the answered lines (each once) in the output', async () => {
  const openai = new OpenAI({
    baseURL: gw.baseUrl,
    apiKey: 'unused-placeholder',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@slow-openai' },
  });
  fake.setBehaviour({ latencyMs: 500 });
  const lines = Array.from({ length: 600 }, (_, i) =>
    JSON.stringify({
      custom_id: `e-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
    }),
  );
  const input = await openai.files.create({ file: await toFile(Buffer.from(lines.join('\n')), 'input.jsonl'), purpose: 'batch' });
  const batch = await openai.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
  expect(batch.expires_at! - batch.created_at).toBe(WINDOW_MS / 1000);

  let current: Batch = batch;
  const deadline = Date.now() + 60_000;
  while (!['completed', 'expired', 'failed', 'cancelled'].includes(current.status) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
    current = await openai.batches.retrieve(batch.id);
  }
  expect(current.status).toBe('expired');
  // Within a few seconds of the window's end (a running chunk looks every half second).
  expect(current.expired_at! - current.expires_at!).toBeLessThanOrEqual(5);
  const text = await (await openai.files.content(current.output_file_id!)).text();
  const ids = text
    .split('\n')
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { custom_id: string }).custom_id);
  expect(new Set(ids).size).toBe(ids.length);
  expect(ids.length).toBe(current.request_counts!.completed);
  expect(ids.length).toBeGreaterThan(0);
  expect(ids.length).toBeLessThan(600);
}, 120_000);
