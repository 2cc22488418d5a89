import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, errorOf, startTestGateway } from '../support/gateway';

// Request logs filtered by metadata (`GET /v1/logs?metadata.<key>=<value>`), read from the
// index of a well-known key (`_user`, `_prompt`, `_organisation`, `_environment`), never by
// scanning the workspace's logs. Records are written by real chat calls.

let gw: LocalGateway;
let fake: FakeServer;
let other: { key: string };
const PROVIDER_KEY = 'sk-logs-metadata-0123456789';
/** Values unique to this run, so records of other files (same DynamoDB Local) never match. */
const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const u1 = `u1-${run}`;
const u2 = `u2-${run}`;

beforeAll(async () => {
  fake = await startOpenAIFake();
  gw = await startTestGateway();
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: `Logs other ${run}` } });
  expect(ws.status, ws.text).toBe(200);
  const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'other', workspace_id: ws.body.id, scopes: ['admin', 'gateway'] } });
  expect(key.status, key.text).toBe(200);
  other = { key: key.body.secret };
});

afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

let traces = 0;

/** One chat completion with this metadata; resolves once its log record is readable. */
async function chat(metadata: Record<string, string> | undefined, opts: { key?: string; user?: string } = {}): Promise<string> {
  const traceId = `logs-meta-${run}-${++traces}`;
  const res = await call(gw, 'POST', '/v1/chat/completions', {
    key: opts.key ?? gw.adminKey,
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...(opts.user ? { user: opts.user } : {}) },
    headers: {
      'x-gateway-provider': 'openai',
      'x-gateway-custom-host': `${fake.url}/v1`,
      authorization: `Bearer ${PROVIDER_KEY}`,
      'x-gateway-trace-id': traceId,
      ...(metadata ? { 'x-gateway-metadata': JSON.stringify(metadata) } : {}),
    },
  });
  expect(res.status, res.text).toBe(200);
  for (let i = 0; i < 200; i++) {
    const found = await call(gw, 'GET', `/v1/logs?trace_id=${traceId}`, { key: opts.key ?? gw.adminKey });
    if (found.body.data.length) return found.body.data[0].id as string;
    await sleep(25);
  }
  throw new Error(`no log record for ${traceId}`);
}

const logs = (query: string, key = gw.adminKey) => call(gw, 'GET', `/v1/logs?${query}`, { key });
const ids = (res: { body: { data: Array<{ id: string }> } }) => res.body.data.map((r) => r.id);

describe('filtering request logs by metadata', () => {
  const u1Ids: string[] = [];
  const u1Prod: string[] = [];

  beforeAll(async () => {
    u1Prod.push(await chat({ _user: u1, _environment: `prod-${run}`, feature: 'search' }));
    u1Ids.push(u1Prod[0]!);
    await chat({ _user: u2, _environment: `prod-${run}` });
    u1Ids.push(await chat({ _user: u1, _environment: `staging-${run}`, feature: 'chat' }));
    u1Prod.push(await chat({ _user: u1, _environment: `prod-${run}`, feature: 'chat' }));
    u1Ids.push(u1Prod[1]!);
    await chat({ _user: u2 });
  }, 60_000);

  it('metadata._user returns exactly that user’s records, newest first', async () => {
    const res = await logs(`metadata._user=${u1}`);
    expect(res.status, res.text).toBe(200);
    expect(ids(res)).toEqual([...u1Ids].reverse());
    for (const record of res.body.data) expect(record.metadata._user).toBe(u1);
    expect(Object.keys(res.body.data[0]).filter((k) => k.startsWith('meta_'))).toEqual([]);
    expect(ids(await logs(`metadata._user=${u2}`))).toHaveLength(2);
    expect(ids(await logs(`metadata._user=nobody-${run}`))).toEqual([]);
  });

  it('several keys must all match (two indexed keys, or an indexed key and any other)', async () => {
    expect(ids(await logs(`metadata._user=${u1}&metadata._environment=prod-${run}`))).toEqual([...u1Prod].reverse());
    expect(ids(await logs(`metadata._environment=prod-${run}`))).toHaveLength(3);
    expect(ids(await logs(`metadata._environment=prod-${run}&metadata.feature=chat`))).toEqual([u1Prod[1]]);
    expect(ids(await logs(`metadata._user=${u1}&metadata.feature=chat`))).toEqual([u1Prod[1], u1Ids[1]]);
    expect(ids(await logs(`metadata._user=${u1}&status=200&model=gpt-4o-mini`))).toHaveLength(3);
  });

  it('pages through a filtered list with limit and after/before', async () => {
    const first = await logs(`metadata._user=${u1}&limit=2`);
    expect(first.body).toMatchObject({ has_more: true });
    expect(ids(first)).toEqual([u1Ids[2], u1Ids[1]]);
    const second = await logs(`metadata._user=${u1}&limit=2&after=${first.body.last_id}`);
    expect(ids(second)).toEqual([u1Ids[0]]);
    expect(second.body.has_more).toBe(false);
    const back = await logs(`metadata._user=${u1}&limit=2&before=${u1Ids[0]}`);
    expect(ids(back)).toEqual([u1Ids[2], u1Ids[1]]);
    const ascending = await logs(`metadata._user=${u1}&order=asc&limit=2`);
    expect(ids(ascending)).toEqual([u1Ids[0], u1Ids[1]]);
  });

  it('keeps workspaces apart: the same value in another workspace is not listed', async () => {
    const otherId = await chat({ _user: u1 }, { key: other.key });
    expect(ids(await logs(`metadata._user=${u1}`, other.key))).toEqual([otherId]);
    expect(ids(await logs(`metadata._user=${u1}`))).not.toContain(otherId);
    expect(ids(await logs(`metadata._user=${u1}`))).toHaveLength(3);
  });

  it('a filter on a key without an index, alone, is a 400 naming the field and the indexed keys', async () => {
    const res = await logs('metadata.feature=chat');
    expect(res.status).toBe(400);
    const err = errorOf(res);
    expect(err).toMatchObject({ type: 'invalid_request_error', param: 'metadata.feature', code: 'unindexed_filter' });
    expect(err.message).toContain('metadata._user');
    expect(err.message).toContain('metadata._environment');
    expect(errorOf(await logs('metadata.=x')).param).toBe('metadata.');
    expect(errorOf(await logs('metadata._user=')).param).toBe('metadata._user');
    expect(errorOf(await logs(`metadata._user=${'x'.repeat(600)}`)).param).toBe('metadata._user');
  });

  it('a trace id narrows by any metadata key', async () => {
    const traceId = `logs-meta-${run}-1`;
    expect(ids(await logs(`trace_id=${traceId}&metadata.feature=search`))).toEqual([u1Prod[0]]);
    expect(ids(await logs(`trace_id=${traceId}&metadata.feature=chat`))).toEqual([]);
  });
});

describe('the well-known metadata keys', () => {
  it('_user comes from the OpenAI body’s `user` when the metadata names none', async () => {
    const bodyUser = `body-user-${run}`;
    const id = await chat(undefined, { user: bodyUser });
    const res = await logs(`metadata._user=${bodyUser}`);
    expect(ids(res)).toEqual([id]);
    expect(res.body.data[0].metadata).toEqual({ _user: bodyUser });
    const explicit = await chat({ _user: `meta-user-${run}` }, { user: `ignored-${run}` });
    expect(ids(await logs(`metadata._user=meta-user-${run}`))).toEqual([explicit]);
    expect(ids(await logs(`metadata._user=ignored-${run}`))).toEqual([]);
  });

  it('_organisation is indexed; a well-known value over 512 characters is refused at the request', async () => {
    const id = await chat({ _organisation: `org-${run}` });
    expect(ids(await logs(`metadata._organisation=org-${run}`))).toEqual([id]);
    const long = await call(gw, 'POST', '/v1/chat/completions', {
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
      headers: {
        'x-gateway-provider': 'openai',
        'x-gateway-custom-host': `${fake.url}/v1`,
        authorization: `Bearer ${PROVIDER_KEY}`,
        'x-gateway-metadata': JSON.stringify({ _user: 'u'.repeat(513) }),
      },
    });
    expect(long.status).toBe(400);
    expect(errorOf(long)).toMatchObject({ param: 'x-gateway-metadata' });
    expect(errorOf(long).message).toContain('_user');
  });
});

describe('a logs table kept from before the metadata indexes (local data dir)', () => {
  it('gets the missing indexes at start-up', { timeout: 120_000 }, async () => {
    const { CreateTableCommand, DescribeTableCommand, DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
    const { createTables, startDynamoDbLocal } = await import('../../infra/local/dynamodb');
    const { TABLE_NAMES } = await import('../../functions/shared/tables');
    // Its own emulator, as a data dir from an older version would have: on the JVM every
    // test file shares, an index added late was still CREATING two minutes on.
    const dynamo = await startDynamoDbLocal(null);
    const client = new DynamoDBClient({ endpoint: dynamo.endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    const names = Object.fromEntries(TABLE_NAMES.map((t) => [t, `old-${run}-${t}`]));
    try {
      await client.send(
        new CreateTableCommand({
          TableName: names.logs,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: ['pk', 'sk', 'gsi1pk', 'gsi1sk'].map((AttributeName) => ({ AttributeName, AttributeType: 'S' })),
          KeySchema: [
            { AttributeName: 'pk', KeyType: 'HASH' },
            { AttributeName: 'sk', KeyType: 'RANGE' },
          ],
          GlobalSecondaryIndexes: [
            {
              IndexName: 'gsi1',
              KeySchema: [
                { AttributeName: 'gsi1pk', KeyType: 'HASH' },
                { AttributeName: 'gsi1sk', KeyType: 'RANGE' },
              ],
              Projection: { ProjectionType: 'ALL' },
            },
          ],
        }),
      );
      await createTables(dynamo.endpoint, names);
      const described = await client.send(new DescribeTableCommand({ TableName: names.logs }));
      expect((described.Table?.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName).sort()).toEqual(
        ['gsi1', 'meta_environment', 'meta_organisation', 'meta_prompt', 'meta_user'].sort(),
      );
    } finally {
      client.destroy();
      await dynamo.stop();
    }
  });
});
