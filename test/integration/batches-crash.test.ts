import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import type { Batch } from 'openai/resources/batches';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { startOwnDataGateway, type OwnDataGateway } from '../support/own-data-gateway';

// `kill -9` of the whole gateway (node and its DynamoDB Local) in the middle of a batch, then
// `npm start` again on the same data folder: the input file (S3 store), the batch and its
// answered lines (DynamoDB Local) and the queued chunks (the SQS journal) are all on disk, so
// the batch completes with every custom_id answered exactly once.
const dataDir = mkdtempSync(join(tmpdir(), 'gateway-batch-crash-'));
const running: OwnDataGateway[] = [];
let fake: FakeServer;

beforeAll(async () => {
  // Slow enough that the kill lands mid-batch: 300 lines, 8 in flight, 100 ms each.
  fake = await startOpenAIFake({ latencyMs: 100 });
});
afterAll(async () => {
  for (const gw of running) await gw.kill();
  await fake?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function start(): Promise<{ gw: OwnDataGateway; openai: OpenAI }> {
  const gw = await startOwnDataGateway(dataDir);
  running.push(gw);
  const openai = new OpenAI({
    baseURL: `${gw.url}/v1`,
    apiKey: 'unused-placeholder',
    maxRetries: 2,
    timeout: 60_000,
    defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@crash-openai' },
  });
  return { gw, openai };
}

async function until(openai: OpenAI, id: string, done: (b: Batch) => boolean, timeoutMs: number): Promise<Batch> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const batch = await openai.batches.retrieve(id);
    if (done(batch)) return batch;
    if (Date.now() > deadline) throw new Error(`batch ${id} still ${batch.status} after ${timeoutMs} ms: ${JSON.stringify(batch.request_counts)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

it('a kill -9 mid-batch and a restart complete the batch: no line lost, none answered twice', async () => {
  const first = await start();
  const provider = await fetch(`${first.gw.url}/v1/providers`, {
    method: 'POST',
    headers: { 'x-gateway-api-key': first.gw.adminKey, 'content-type': 'application/json' },
    body: JSON.stringify({ slug: 'crash-openai', provider: 'openai', api_key: 'sk-managed', custom_host: `${fake.url}/v1` }),
  });
  expect(provider.status, await provider.text()).toBe(200);

  const ids = Array.from({ length: 300 }, (_, i) => `crash-${i}`);
  const jsonl = ids.map((id) =>
    JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: id }] } }),
  );
  const input = await first.openai.files.create({ file: await toFile(Buffer.from(`${jsonl.join('\n')}\n`), 'input.jsonl'), purpose: 'batch' });
  const batch = await first.openai.batches.create({ input_file_id: input.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
  const midway = await until(first.openai, batch.id, (b) => (b.request_counts?.completed ?? 0) >= 40, 120_000);
  expect(midway.status).toBe('in_progress');
  await first.gw.kill();
  const answeredBeforeKill = fake.requests.length;
  expect(answeredBeforeKill).toBeLessThan(300);

  const second = await start();
  const done = await until(second.openai, batch.id, (b) => ['completed', 'failed', 'expired', 'cancelled'].includes(b.status), 240_000);
  expect(done).toMatchObject({ status: 'completed', request_counts: { total: 300, completed: 300, failed: 0 }, error_file_id: null });
  const output = (await (await second.openai.files.content(done.output_file_id!)).text())
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { custom_id: string; response: { status_code: number } | null });
  expect(output).toHaveLength(300);
  expect(new Set(output.map((l) => l.custom_id))).toEqual(new Set(ids));
  expect(output.every((l) => l.response?.status_code === 200)).toBe(true);
  // Only the lines in flight at the kill can have reached the provider twice (called, never recorded).
  expect(fake.requests.length).toBeLessThanOrEqual(300 + 8 + 2);
}, 600_000);
