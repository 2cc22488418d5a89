import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, startTestGateway } from '../support/gateway';

// REQUEST_LOG_BATCH_WAIT_MS (the local runtime's default is 20 ms; Lambda's is 0): records
// of requests that end one after another share one BatchWriteItem. A long wait here makes
// the order of events observable without timing assertions.
const WAIT_MS = 3000;

type Ops = typeof import('../../functions/shared/db/ops');
let gw: LocalGateway;
let fake: FakeServer;
let ops: Ops;
let storageCalls: Record<string, number>;

beforeAll(async () => {
  fake = await startOpenAIFake();
  gw = await startTestGateway({ env: { REQUEST_LOG_BATCH_WAIT_MS: String(WAIT_MS) } });
  ops = await import('../../functions/shared/db/ops');
  ({ storageCalls } = await import('../../functions/shared/db/client'));
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

const batchWrites = () => storageCalls.BatchWriteItemCommand ?? 0;

function chat(traceId: string) {
  return call(gw, 'POST', '/v1/chat/completions', {
    headers: { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${fake.url}/v1`, authorization: 'Bearer sk-x', 'x-gateway-trace-id': traceId },
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: traceId }] },
  });
}

async function logged(traceId: string) {
  for (;;) {
    const res = await call(gw, 'GET', `/v1/logs?trace_id=${traceId}`);
    if (res.body.data.length) return res.body.data[0];
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('request-log records grouped across requests', () => {
  it('answers without waiting for the write; records of consecutive requests share one call', async () => {
    const traces = Array.from({ length: 4 }, (_, i) => `batch-wait-${Date.now()}-${i}`);
    const before = batchWrites();
    for (const trace of traces) {
      const res = await chat(trace);
      expect(res.status).toBe(200);
      expect(res.body.choices[0].message.content).toBe(`echo: ${trace}`);
    }
    // Every answer is in, and no record has been written yet: they wait for each other.
    expect(batchWrites() - before).toBe(0);
    const records = await Promise.all(traces.map(logged));
    expect(records.map((r: { status: number }) => r.status)).toEqual([200, 200, 200, 200]);
    expect(batchWrites() - before).toBe(1);
  }, 20_000);

  it('stopping the runtime lets waiting records be written first', async () => {
    const traces = [`drain-${Date.now()}-a`, `drain-${Date.now()}-b`];
    for (const trace of traces) expect((await chat(trace)).status).toBe(200);
    const workspaceId = gw.workspaceId;
    await gw.stop();
    const { logReadPartitions } = await import('../../functions/shared/db/log-keys');
    const stored = (await Promise.all(logReadPartitions(workspaceId).map((pk) => ops.queryAll<{ trace_id: string }>('logs', pk, 'log_')))).flat();
    expect(stored.map((r) => r.trace_id)).toEqual(expect.arrayContaining(traces));
  }, 20_000);
});
