import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import type { MessageBatch, MessageBatchIndividualResponse } from '@anthropic-ai/sdk/resources/messages/batches';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { startOwnDataGateway, type OwnDataGateway } from '../support/own-data-gateway';

// `kill -9` of the whole gateway in the middle of a Message Batch, then `npm start` again on
// the same data folder: the requests (the batch's input file in the S3 store), the batch and
// its answers (DynamoDB Local) and the queued chunks (the SQS journal) are on disk, so the
// batch ends with every custom_id answered exactly once, and its results say so.
const dataDir = mkdtempSync(join(tmpdir(), 'gateway-msgbatch-crash-'));
const running: OwnDataGateway[] = [];
let fake: FakeServer;

beforeAll(async () => {
  // Slow enough that the kill lands mid-batch: 300 requests, 8 in flight, 100 ms each.
  fake = await startOpenAIFake({ latencyMs: 100 });
});
afterAll(async () => {
  for (const gw of running) await gw.kill();
  await fake?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function start(): Promise<{ gw: OwnDataGateway; anthropic: Anthropic }> {
  const gw = await startOwnDataGateway(dataDir);
  running.push(gw);
  const anthropic = new Anthropic({
    baseURL: gw.url,
    apiKey: gw.adminKey,
    maxRetries: 2,
    timeout: 60_000,
    defaultHeaders: { 'x-gateway-provider': '@crash-openai' },
  });
  return { gw, anthropic };
}

async function until(anthropic: Anthropic, id: string, done: (b: MessageBatch) => boolean, timeoutMs: number): Promise<MessageBatch> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const batch = await anthropic.messages.batches.retrieve(id);
    if (done(batch)) return batch;
    if (Date.now() > deadline) throw new Error(`batch ${id} still ${batch.processing_status} after ${timeoutMs} ms: ${JSON.stringify(batch.request_counts)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

it('a kill -9 mid-batch and a restart end the batch: no request lost, none answered twice', async () => {
  const first = await start();
  const provider = await fetch(`${first.gw.url}/v1/providers`, {
    method: 'POST',
    headers: { 'x-gateway-api-key': first.gw.adminKey, 'content-type': 'application/json' },
    body: JSON.stringify({ slug: 'crash-openai', provider: 'openai', api_key: 'sk-managed', custom_host: `${fake.url}/v1` }),
  });
  expect(provider.status, await provider.text()).toBe(200);

  const ids = Array.from({ length: 300 }, (_, i) => `crash-${i}`);
  const batch = await first.anthropic.messages.batches.create({
    requests: ids.map((custom_id) => ({ custom_id, params: { model: 'gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: custom_id }] } })),
  });
  const midway = await until(first.anthropic, batch.id, (b) => b.request_counts.succeeded >= 40, 120_000);
  expect(midway.processing_status).toBe('in_progress');
  await first.gw.kill();
  expect(fake.requests.length).toBeLessThan(300);

  const second = await start();
  const done = await until(second.anthropic, batch.id, (b) => b.processing_status === 'ended', 240_000);
  expect(done.request_counts).toEqual({ processing: 0, succeeded: 300, errored: 0, canceled: 0, expired: 0 });
  const results: MessageBatchIndividualResponse[] = [];
  for await (const line of await second.anthropic.messages.batches.results(batch.id)) results.push(line);
  expect(results.map((r) => r.custom_id)).toEqual(ids);
  expect(results.every((r) => r.result.type === 'succeeded')).toBe(true);
  // Only the requests in flight at the kill can have reached the provider twice (called, never recorded).
  expect(fake.requests.length).toBeLessThanOrEqual(300 + 8 + 2);
}, 600_000);
