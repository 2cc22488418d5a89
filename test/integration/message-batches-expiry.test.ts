import Anthropic from '@anthropic-ai/sdk';
import type { MessageBatch, MessageBatchIndividualResponse } from '@anthropic-ai/sdk/resources/messages/batches';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, startTestGateway } from '../support/gateway';

// A Message Batch whose window (GATEWAY_BATCH_WINDOW_MS, 24 h by default) passes before its
// requests are answered: it ends, the answered requests `succeeded`, the rest `expired`.
// Long enough that a loaded machine answers some requests in it; 600 requests at 8 in flight, 0.5 s each, need ~40 s.
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

it('expires when its window passes: answered requests succeeded, the others expired, each custom_id once', async () => {
  const anthropic = new Anthropic({ baseURL: gw.url, apiKey: gw.adminKey, maxRetries: 0, defaultHeaders: { 'x-gateway-provider': '@slow-openai' } });
  fake.setBehaviour({ latencyMs: 500 });
  const requests = Array.from({ length: 600 }, (_, i) => ({
    custom_id: `e-${i}`,
    params: { model: 'gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user' as const, content: 'hi' }] },
  }));
  const batch = await anthropic.messages.batches.create({ requests });
  expect(Date.parse(batch.expires_at) - Date.parse(batch.created_at)).toBe(WINDOW_MS);

  let current: MessageBatch = batch;
  const deadline = Date.now() + 60_000;
  while (current.processing_status !== 'ended' && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
    current = await anthropic.messages.batches.retrieve(batch.id);
  }
  expect(current.processing_status).toBe('ended');
  // Within a few seconds of the window's end (a running chunk looks every half second).
  expect(Date.parse(current.ended_at!) - Date.parse(current.expires_at)).toBeLessThanOrEqual(5_000);
  const counts = current.request_counts;
  expect(counts).toMatchObject({ processing: 0, canceled: 0, errored: 0 });
  expect(counts.succeeded).toBeGreaterThan(0);
  expect(counts.expired).toBeGreaterThan(0);
  expect(counts.succeeded + counts.expired).toBe(600);

  const results: MessageBatchIndividualResponse[] = [];
  for await (const line of await anthropic.messages.batches.results(batch.id)) results.push(line);
  expect(results.map((r) => r.custom_id)).toEqual(requests.map((r) => r.custom_id));
  expect(results.filter((r) => r.result.type === 'expired')).toHaveLength(counts.expired);
  expect(results.filter((r) => r.result.type === 'succeeded')).toHaveLength(counts.succeeded);
}, 120_000);
