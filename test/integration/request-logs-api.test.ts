import { DescribeTimeToLiveCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { TABLE_SPECS } from '../../infra/tables';
import { call, startTestGateway } from '../support/gateway';

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

describe('TTL in DynamoDB Local', () => {
  it('is on for counters and cached responses and off for request logs, whose sweeps would stall every call', async () => {
    const client = new DynamoDBClient({ endpoint: gw.dynamodbEndpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    try {
      const status: Record<string, string | undefined> = {};
      for (const spec of TABLE_SPECS.filter((s) => s.ttlAttribute)) {
        const out = await client.send(new DescribeTimeToLiveCommand({ TableName: `${process.env.GATEWAY_TEST_TABLE_PREFIX}${spec.name}` }));
        status[spec.name] = out.TimeToLiveDescription?.TimeToLiveStatus;
      }
      expect(status).toEqual({ usage: 'ENABLED', cache: 'ENABLED', logs: 'DISABLED' });
    } finally {
      client.destroy();
    }
  });
});
