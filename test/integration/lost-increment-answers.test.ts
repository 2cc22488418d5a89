import http from 'node:http';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, startTestGateway } from '../support/gateway';

// An increment (spend counter, budget charge, tokens policy usage) that DynamoDB applies
// but whose answer never reaches the gateway: the client retries the same update, which
// must not count twice (functions/shared/db/ops.ts, addOnce). The gateway talks to
// DynamoDB Local through a proxy that can lose one answer.

/** Which call to lose: by its operation (`UpdateItem`, ...) and its JSON body. */
type LossRule = (operation: string, body: string) => boolean;

/** An HTTP proxy to DynamoDB that, once armed, forwards the next matching call and then drops its connection instead of answering. */
function startLossyProxy(target: string) {
  const upstream = new URL(target);
  let armed: LossRule | undefined;
  /** Bodies of the calls whose answers were lost, and of those answered. */
  const lost: string[] = [];
  const answered: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const operation = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? '';
      const lose = armed?.(operation, body.toString('utf8')) ?? false;
      if (lose) armed = undefined;
      const forwarded = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
        const parts: Buffer[] = [];
        answer.on('data', (c: Buffer) => parts.push(c));
        answer.on('end', () => {
          if (lose) {
            // Applied by DynamoDB; the caller never hears of it.
            lost.push(body.toString('utf8'));
            req.socket.destroy();
            return;
          }
          answered.push(body.toString('utf8'));
          res.writeHead(answer.statusCode ?? 500, answer.headers);
          res.end(Buffer.concat(parts));
        });
      });
      forwarded.on('error', () => req.socket.destroy());
      forwarded.end(body);
    });
  });
  return new Promise<{ url: string; arm: LossRule | undefined; lost: string[]; answered: string[]; close: () => Promise<void> }>((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      resolve({
        url: `http://127.0.0.1:${port}`,
        set arm(rule: LossRule | undefined) {
          armed = rule;
        },
        lost,
        answered,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

let proxy: Awaited<ReturnType<typeof startLossyProxy>>;
let gw: LocalGateway;
let fake: FakeServer;
let key: { id: string; secret: string };
const startedAt = Math.floor(Date.now() / 1000);

beforeAll(async () => {
  proxy = await startLossyProxy(inject('dynamodbEndpoint'));
  fake = await startOpenAIFake();
  gw = await startTestGateway({ dynamodbEndpoint: proxy.url });
  const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'lost answers', scopes: ['gateway'] } });
  key = { id: created.body.id, secret: created.body.secret };
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
  await proxy?.close();
});

const spendOfKey = async () => {
  const report = await call(gw, 'GET', `/v1/analytics/spend?group_by=api_key&from=${startedAt - 3600}&to=${startedAt + 7200}`);
  expect(report.status, report.text).toBe(200);
  return report.body.data.find((row: { group: string | null }) => row.group === key.id) as { requests: number; cost_usd: number } | undefined;
};

const chat = () =>
  call(gw, 'POST', '/v1/chat/completions', {
    key: key.secret,
    headers: { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${fake.url}/v1`, authorization: 'Bearer sk-x' },
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'count me once' }] },
  });

const writeIdOf = (body: string) => /":write_id":\{"S":"([^"]+)"\}/.exec(body)?.[1];

/** The write is after-response work: wait until an answer was lost and its retry (the same update, by its id) was answered. */
async function lostAndRetried(): Promise<void> {
  for (let i = 0; i < 50 && !proxy.lost.length; i++) await new Promise((r) => setTimeout(r, 100));
  expect(proxy.lost).toHaveLength(1);
  const lostId = writeIdOf(proxy.lost[0]!);
  expect(lostId).toBeDefined();
  for (let i = 0; i < 50 && !proxy.answered.some((b) => writeIdOf(b) === lostId); i++) await new Promise((r) => setTimeout(r, 100));
  expect(proxy.answered.filter((b) => writeIdOf(b) === lostId)).toHaveLength(1);
  proxy.lost.length = 0;
}

describe('a spend counter update whose answer is lost', () => {
  it('is retried and still counts the request once', async () => {
    proxy.arm = (operation, body) => operation === 'UpdateItem' && body.includes('last_write') && body.includes('requests');
    const res = await chat();
    expect(res.status, res.text).toBe(200);
    await lostAndRetried();
    let row = await spendOfKey();
    expect(row?.requests).toBe(1);

    // A second request, nothing lost: two in all, each counted once.
    expect((await chat()).status).toBe(200);
    for (let i = 0; i < 50 && (row?.requests ?? 0) < 2; i++) {
      await new Promise((r) => setTimeout(r, 100));
      row = await spendOfKey();
    }
    expect(row?.requests).toBe(2);
  }, 30_000);
});

describe('a budget charge whose answer is lost', () => {
  it('is retried and charges the budget once: the next request is still admitted', async () => {
    const model = `lost-budget-${Date.now()}`;
    expect((await call(gw, 'POST', '/v1/prices', { body: { provider: 'openai', model, per_request: 0.001 } })).status).toBe(200);
    const budget = await call(gw, 'POST', '/v1/policies/budgets', {
      body: { type: 'budget', name: 'two requests', limit_usd: 0.002, period: 'day', conditions: [{ key: 'api_key', value: key.id }] },
    });
    expect(budget.status, budget.text).toBe(200);
    const ask = () =>
      call(gw, 'POST', '/v1/chat/completions', {
        key: key.secret,
        headers: { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${fake.url}/v1`, authorization: 'Bearer sk-x' },
        body: { model, messages: [{ role: 'user', content: 'charge me once' }] },
      });

    proxy.arm = (operation, body) => operation === 'UpdateItem' && body.includes('spent_nusd');
    expect((await ask()).status).toBe(200);
    await lostAndRetried();
    // Charged 0.001 of 0.002, not twice: the second request is admitted, and sees what the first spent.
    const second = await ask();
    expect(second.status, second.text).toBe(200);
    expect(second.headers.get('x-budget-spent-usd')).toBe('0.001');
  }, 30_000);
});

describe("a tokens policy's usage update whose answer is lost", () => {
  it('is retried and counts the tokens once: the next request is still admitted', async () => {
    const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'lost tokens', scopes: ['gateway'] } });
    const tokensKey = { id: created.body.id as string, secret: created.body.secret as string };
    const ask = () =>
      call(gw, 'POST', '/v1/chat/completions', {
        key: tokensKey.secret,
        headers: { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${fake.url}/v1`, authorization: 'Bearer sk-x' },
        body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'count my tokens once' }] },
      });
    // What one request uses (the fake's usage is the same each time), before any policy.
    const calibration = await ask();
    expect(calibration.status).toBe(200);
    const perRequest = calibration.body.usage.total_tokens as number;
    expect(perRequest).toBeGreaterThan(0);
    // Room for one request's tokens and a half: a second request is admitted unless the first was counted twice.
    const policy = await call(gw, 'POST', '/v1/policies/rate-limits', {
      body: { conditions: [{ key: 'api_key', value: tokensKey.id }], group_by: [], type: 'tokens', unit: 'rpd', value: Math.floor(perRequest * 1.5) },
    });
    expect(policy.status, policy.text).toBe(200);

    proxy.arm = (operation, body) => operation === 'UpdateItem' && body.includes('last_write') && body.includes('"count"');
    expect((await ask()).status).toBe(200);
    await lostAndRetried();
    const second = await ask();
    expect(second.status, second.text).toBe(200);
  }, 30_000);
});
