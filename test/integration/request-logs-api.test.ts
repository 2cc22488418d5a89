import { DescribeTimeToLiveCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { TABLE_SPECS } from '../../infra/tables';
import { call, logsOf, startTestGateway } from '../support/gateway';

type Ops = typeof import('../../functions/shared/db/ops');
let gw: LocalGateway;
let ops: Ops;

beforeAll(async () => {
  gw = await startTestGateway();
  ops = await import('../../functions/shared/db/ops');
});
afterAll(async () => {
  await gw?.stop();
});

const now = () => Math.floor(Date.now() / 1000);

function record(id: string, trace: string, ttl: number) {
  return {
    pk: `WS#${gw.workspaceId}#LOG`,
    sk: id,
    gsi1pk: `WS#${gw.workspaceId}#TRACE#${trace}`,
    gsi1sk: id,
    ttl,
    object: 'request_log',
    id,
    trace_id: trace,
    workspace_id: gw.workspaceId,
    status: 200,
    created_at: now() - 100,
  };
}

describe('request logs past their TTL', () => {
  it('are neither listed nor returned, until DynamoDB deletes them', async () => {
    const trace = `ttl-${Date.now()}`;
    await ops.putItem('logs', record('log_00000000000000000000000001', trace, now() - 60));
    await ops.putItem('logs', record('log_00000000000000000000000002', trace, now() + 3600));
    const listed = await call(gw, 'GET', `/v1/logs?trace_id=${trace}`);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((r: { id: string }) => r.id)).toEqual(['log_00000000000000000000000002']);
    expect((await call(gw, 'GET', '/v1/logs/log_00000000000000000000000001')).status).toBe(404);
    expect((await call(gw, 'GET', '/v1/logs/log_00000000000000000000000002')).status).toBe(200);
  });
});

describe('a trace id the gateway made', () => {
  // A request refused by validation still leaves a record: no provider needed.
  const refused = (headers: Record<string, string> = {}) => call(gw, 'POST', '/v1/chat/completions', { headers, body: { messages: [] } });

  it("is the id of the request's one record, stored without a trace-index entry and found by trace_id", async () => {
    const res = await refused();
    expect(res.status).toBe(400);
    const trace = res.headers.get('x-gateway-trace-id')!;
    expect(trace).toMatch(/^log_[0-9a-z]{26}$/);
    const logs = await logsOf(gw, `trace_id=${trace}`);
    expect(logs.body.data).toHaveLength(1);
    expect(logs.body.data[0]).toMatchObject({ id: trace, trace_id: trace, status: 400, route: 'chat.completions' });
    const { logPartition } = await import('../../functions/shared/db/log-keys');
    const item = await ops.getItem<Record<string, unknown>>('logs', { pk: logPartition(gw.workspaceId, trace), sk: trace });
    expect(item).toBeDefined();
    expect(item!.gsi1pk).toBeUndefined();
    expect((await call(gw, 'GET', `/v1/logs/${trace}`)).body.id).toBe(trace);
  });

  it('given back by the caller links later requests to the first: all of them listed newest first, page by page, filters applied', async () => {
    const first = (await refused()).headers.get('x-gateway-trace-id')!;
    await logsOf(gw, `trace_id=${first}`);
    const second = await refused({ 'x-gateway-trace-id': first });
    expect(second.headers.get('x-gateway-trace-id')).toBe(first);
    const logs = await logsOf(gw, `trace_id=${first}`, 2);
    const ids = logs.body.data.map((r: { id: string }) => r.id);
    expect(ids).toHaveLength(2);
    expect(ids[1]).toBe(first); // the later request's record (a new id, in the index) comes first
    expect(ids[0] > first).toBe(true);
    expect(logs.body.data.every((r: { trace_id: string }) => r.trace_id === first)).toBe(true);

    const page1 = await call(gw, 'GET', `/v1/logs?trace_id=${first}&limit=1`);
    expect(page1.body.data.map((r: { id: string }) => r.id)).toEqual([ids[0]]);
    expect(page1.body.has_more).toBe(true);
    const page2 = await call(gw, 'GET', `/v1/logs?trace_id=${first}&limit=1&after=${ids[0]}`);
    expect(page2.body.data.map((r: { id: string }) => r.id)).toEqual([first]);
    expect(page2.body.has_more).toBe(false);
    const back = await call(gw, 'GET', `/v1/logs?trace_id=${first}&limit=1&before=${first}`);
    expect(back.body.data.map((r: { id: string }) => r.id)).toEqual([ids[0]]);
    const ascending = await call(gw, 'GET', `/v1/logs?trace_id=${first}&order=asc`);
    expect(ascending.body.data.map((r: { id: string }) => r.id)).toEqual([first, ids[0]]);

    expect((await call(gw, 'GET', `/v1/logs?trace_id=${first}&status=200`)).body.data).toEqual([]);
  });

  it('are filtered by the gateway key that made them (api_key_id)', async () => {
    const other = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'logs-filter', role: 'member', scopes: ['gateway'] } });
    expect(other.status, other.text).toBe(200);
    const byOther = (await call(gw, 'POST', '/v1/chat/completions', { key: other.body.secret, body: { messages: [] } })).headers.get('x-gateway-trace-id')!;
    const byAdmin = (await refused()).headers.get('x-gateway-trace-id')!;
    const mine = await logsOf(gw, `api_key_id=${other.body.id}`);
    expect(mine.body.data.map((r: { id: string }) => r.id)).toEqual([byOther]);
    expect(mine.body.data[0].api_key_id).toBe(other.body.id);
    const admins = await logsOf(gw, `trace_id=${byAdmin}&api_key_id=${other.body.id}`, 0);
    expect(admins.body.data).toEqual([]);
  });

  it("is never another workspace's record", async () => {
    const trace = (await refused()).headers.get('x-gateway-trace-id')!;
    await logsOf(gw, `trace_id=${trace}`);
    const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: `other-${Date.now()}` } });
    const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'k', workspace_id: ws.body.id, scopes: ['admin'] } });
    const other = await call(gw, 'GET', `/v1/logs?trace_id=${trace}`, { key: key.body.secret });
    expect(other.status).toBe(200);
    expect(other.body.data).toEqual([]);
  });
});

describe('TTL in DynamoDB Local', () => {
  it('is on for counters and cached responses and off for request logs, whose sweeps would stall every call', async () => {
    const client = new DynamoDBClient({ endpoint: gw.dynamodbEndpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    try {
      const status: Record<string, string | undefined> = {};
      for (const spec of TABLE_SPECS.filter((s) => s.ttlAttribute)) {
        const out = await client.send(new DescribeTimeToLiveCommand({ TableName: `${process.env.GATEWAY_TEST_TABLE_PREFIX}${spec.name}` }));
        status[spec.name] = out.TimeToLiveDescription?.TimeToLiveStatus;
      }
      expect(status).toEqual({ usage: 'ENABLED', cache: 'ENABLED', logs: 'DISABLED', idempotency: 'ENABLED', sessions: 'ENABLED', jobs: 'ENABLED' });
    } finally {
      client.destroy();
    }
  });
});
