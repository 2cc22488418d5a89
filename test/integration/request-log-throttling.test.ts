import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, startTestGateway } from '../support/gateway';
import { startThrottlingDynamoDb } from '../support/throttling-dynamodb';

// A request-log write that DynamoDB keeps throttling is retried with backoff, then goes to the
// log-records queue; the queue's consumer writes it once the throttling stops, counting its
// spend then. Its budget charge, sent with the first write, lands once.

let gw: LocalGateway;
let fake: FakeServer;
let proxy: Awaited<ReturnType<typeof startThrottlingDynamoDb>>;
const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const startedAt = Math.floor(Date.now() / 1000);

beforeAll(async () => {
  fake = await startOpenAIFake();
  proxy = await startThrottlingDynamoDb(inject('dynamodbEndpoint'), (table) => table.endsWith('logs'));
  gw = await startTestGateway({ dynamodbEndpoint: proxy.url, env: { REQUEST_LOG_RETRY_MS: '800', REQUEST_LOG_SHARDS: '2' } });
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await proxy?.close();
  await fake?.close();
});

async function until<T>(what: string, read: () => Promise<T | undefined> | T | undefined, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const chat = (model: string, trace: string) =>
  call(gw, 'POST', '/v1/chat/completions', {
    body: { model, messages: [{ role: 'user', content: 'hi' }] },
    headers: {
      'x-gateway-provider': 'openai',
      'x-gateway-custom-host': `${fake.url}/v1`,
      authorization: 'Bearer sk-throttled-0123456789',
      'x-gateway-trace-id': trace,
      'x-gateway-metadata': JSON.stringify({ _user: `u-${run}` }),
    },
  });

describe('a throttled request-log write', () => {
  it('is retried, dead-lettered to the log-records queue and written from there, its budget charged and its spend counted once', async () => {
    const model = `throttled-${run}`;
    expect((await call(gw, 'POST', '/v1/prices', { body: { provider: 'openai', model, per_request: 0.001 } })).status).toBe(200);
    const budget = await call(gw, 'POST', '/v1/policies/budgets', { body: { type: 'budget', name: `b-${run}`, limit_usd: 0.002, period: 'day' } });
    expect(budget.status, budget.text).toBe(200);

    proxy.state.throttling = true;
    const first = await chat(model, `first-${run}`);
    expect(first.status, first.text).toBe(200);
    expect(first.headers.get('x-gateway-cost')).toBe('0.001');
    const recordWrites = () => proxy.state.writes.filter((w) => w.body.includes(`first-${run}`));
    // The writer's attempts (the batch, then puts alone) are throttled; then the queue's consumer tries, and is throttled too.
    await until('the consumer of the log-records queue to try', () => recordWrites().some((w) => w.conditional));
    const writerAttempts = recordWrites().filter((w) => !w.conditional);
    expect(writerAttempts.length).toBeGreaterThanOrEqual(2);
    expect(writerAttempts[0]!.operation).toBe('BatchWriteItem');
    expect(writerAttempts.every((w) => w.throttled)).toBe(true);
    expect((await call(gw, 'GET', `/v1/logs?trace_id=first-${run}`)).body.data).toEqual([]);

    // Throttling ends: the message comes again and the record is written, once.
    proxy.state.throttling = false;
    const listed = await until('the record to be written from the queue', async () => {
      const res = await call(gw, 'GET', `/v1/logs?trace_id=first-${run}`);
      return res.body.data.length ? res.body.data : undefined;
    });
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ trace_id: `first-${run}`, model, status: 200, cost_usd: 0.001 });
    const stored = recordWrites().filter((w) => !w.throttled);
    expect(stored.map((w) => [w.operation, w.conditional])).toEqual([['PutItem', true]]);
    expect((await call(gw, 'GET', `/v1/logs/${listed[0].id}`)).status).toBe(200);

    // The spend counters count it once (by the consumer), beside a request written normally.
    const second = await chat(model, `second-${run}`);
    expect(second.status, second.text).toBe(200);
    const report = await until('both requests in the spend report', async () => {
      const res = await call(gw, 'GET', `/v1/analytics/spend?from=${startedAt - 3600}&to=${Math.floor(Date.now() / 1000) + 3600}`);
      return res.body.totals?.requests === 2 ? res.body : undefined;
    });
    expect(report.totals).toMatchObject({ requests: 2, cost_usd: 0.002 });

    // The budget (0.002) holds both charges, each once: the next request is refused, and says so.
    await until('the second record', async () => ((await call(gw, 'GET', `/v1/logs?trace_id=second-${run}`)).body.data.length ? true : undefined));
    const refused = await chat(model, `third-${run}`);
    expect(refused.status, refused.text).toBe(429);
    expect(refused.headers.get('x-budget-spent-usd')).toBe('0.002');
  }, 120_000);
});
