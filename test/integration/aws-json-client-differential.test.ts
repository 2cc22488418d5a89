import { CreateTableCommand, DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAwsJsonClient, DYNAMODB } from '../../functions/shared/aws/json-client';
import { DocumentClient, fromWire, toWire, type WireMap } from '../../functions/shared/db/document';

// The gateway's own DynamoDB path (functions/shared/aws/json-client.ts under
// functions/shared/db/document.ts) against the AWS SDK (@aws-sdk/lib-dynamodb with the
// same marshalling options), operation by operation on DynamoDB Local: each step runs on
// both, each on its own table of the same shape, and both answers (or errors) must match.

const endpoint = inject('dynamodbEndpoint');
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
const sdkClient = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials });
const sdk = DynamoDBDocumentClient.from(sdkClient, { marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: true } });
const json = createAwsJsonClient({ ...DYNAMODB, endpointOverride: () => endpoint });
const ours = new DocumentClient((operation, input) => json.send(operation, input));

const stamp = `${Date.now()}-${process.pid}`;
const tables = { ours: `diff-ours-${stamp}`, sdk: `diff-sdk-${stamp}` };
type Side = keyof typeof tables;

/** One operation, written once: `t` is the side's table name. */
interface Driver {
  put(input: Record<string, unknown>): Promise<unknown>;
  get(input: Record<string, unknown>): Promise<unknown>;
  update(input: Record<string, unknown>): Promise<unknown>;
  delete(input: Record<string, unknown>): Promise<unknown>;
  query(input: Record<string, unknown>): Promise<unknown>;
  batchWrite(input: Record<string, unknown>): Promise<unknown>;
  batchGet(input: { RequestItems: Record<string, { Keys: Record<string, unknown>[] }> }): Promise<unknown>;
  transactWrite(input: Record<string, unknown>): Promise<unknown>;
}

const drivers: Record<Side, Driver> = {
  ours: {
    put: (i) => ours.put(i as never),
    get: (i) => ours.get(i as never),
    update: (i) => ours.update(i as never),
    delete: (i) => ours.delete(i as never),
    query: (i) => ours.query(i as never),
    batchWrite: (i) => ours.batchWrite(i as never),
    // The DocumentClient has no BatchGetItem (the gateway does not use it): marshalled by hand.
    batchGet: async ({ RequestItems }) => {
      const wire = Object.fromEntries(Object.entries(RequestItems).map(([t, r]) => [t, { Keys: r.Keys.map(toWire) }]));
      const out = await json.send<{ Responses?: Record<string, WireMap[]>; UnprocessedKeys?: unknown }>('BatchGetItem', { RequestItems: wire });
      return { ...out, Responses: out.Responses && Object.fromEntries(Object.entries(out.Responses).map(([t, items]) => [t, items.map(fromWire)])) };
    },
    transactWrite: (i) => ours.transactWrite(i as never),
  },
  sdk: {
    put: (i) => sdk.send(new PutCommand(i as never)),
    get: (i) => sdk.send(new GetCommand(i as never)),
    update: (i) => sdk.send(new UpdateCommand(i as never)),
    delete: (i) => sdk.send(new DeleteCommand(i as never)),
    query: (i) => sdk.send(new QueryCommand(i as never)),
    batchWrite: (i) => sdk.send(new BatchWriteCommand(i as never)),
    batchGet: (i) => sdk.send(new BatchGetCommand(i)),
    transactWrite: (i) => sdk.send(new TransactWriteCommand(i as never)),
  },
};

/** Binary as base64, so a Uint8Array (SDK) and the JSON protocol's string compare. */
function plain(value: unknown): unknown {
  if (value instanceof Uint8Array) return { $binary: Buffer.from(value).toString('base64') };
  if (value instanceof Set) return { $set: [...value].map(plain).sort() };
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k, plain(v)]),
    );
  return value;
}

/** What a call answered, without the transport's metadata; an error by name, message and modelled members. */
async function outcome(call: Promise<unknown>, side: Side): Promise<unknown> {
  const rename = (v: unknown) => JSON.parse(JSON.stringify(plain(v)).replaceAll(tables[side], '<table>')) as unknown;
  try {
    const { $metadata: _m, ConsumedCapacity: _c, ...rest } = (await call) as Record<string, unknown>;
    return rename({ ok: rest });
  } catch (err) {
    const e = err as Record<string, unknown> & Error;
    // The SDK keeps an error's Item in AttributeValue form; so does the JSON client (base64 binaries).
    const item = e.Item as Record<string, { B?: unknown }> | undefined;
    return rename({ error: { name: e.name, message: e.message, Item: item && plain(item), CancellationReasons: e.CancellationReasons } });
  }
}

/** Runs a step on both sides; returns the (equal) outcome. */
async function both(step: (d: Driver, t: string) => Promise<unknown>): Promise<any> {
  const [a, b] = await Promise.all((['ours', 'sdk'] as const).map((side) => outcome(step(drivers[side], tables[side]), side)));
  expect(a).toEqual(b);
  return a;
}

beforeAll(async () => {
  for (const TableName of Object.values(tables)) {
    await sdkClient.send(
      new CreateTableCommand({
        TableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'sk', AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
      }),
    );
  }
});
afterAll(async () => {
  for (const TableName of Object.values(tables)) await sdkClient.send(new DeleteTableCommand({ TableName })).catch(() => undefined);
  sdkClient.destroy();
});

const rich = {
  pk: 'doc',
  sk: 'rich',
  n: 42,
  neg: -7.25,
  tiny: 1e-9,
  big: Number.MAX_SAFE_INTEGER,
  empty: '',
  none: null,
  yes: true,
  words: new Set(['b', 'a']),
  nums: new Set([3, 1, 2]),
  bin: Uint8Array.from([0, 1, 254, 255]),
  bins: new Set([Uint8Array.from([1]), Uint8Array.from([2, 3])]),
  nested: { list: [1, 'two', { three: [3, { four: Uint8Array.from([4]) }] }], map: { a: { b: { c: 'deep' } } }, emptyMap: {}, emptyList: [] },
  gone: undefined,
};

describe('the JSON client and the SDK answer DynamoDB alike', () => {
  it('put and get round-trip numbers, sets, binary and nested maps', async () => {
    expect(await both((d, t) => d.put({ TableName: t, Item: rich }))).toEqual({ ok: {} });
    const got = await both((d, t) => d.get({ TableName: t, Key: { pk: 'doc', sk: 'rich' }, ConsistentRead: true }));
    expect(got.ok.Item).toEqual(plain({ ...rich, gone: undefined }));
  });

  it('conditional put: success, then ConditionalCheckFailedException with the item when asked for it', async () => {
    const put = (d: Driver, t: string, extra: object = {}) =>
      d.put({ TableName: t, Item: { pk: 'cond', sk: '1', v: 1 }, ConditionExpression: 'attribute_not_exists(pk)', ...extra });
    expect(await both((d, t) => put(d, t))).toEqual({ ok: {} });
    const failed = await both((d, t) => put(d, t));
    expect(failed.error).toMatchObject({ name: 'ConditionalCheckFailedException' });
    const withItem = await both((d, t) => put(d, t, { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }));
    expect(withItem.error.Item).toEqual({ pk: { S: 'cond' }, sk: { S: '1' }, v: { N: '1' } });
    expect(await both((d, t) => d.put({ TableName: t, Item: { pk: 'cond', sk: '1', v: 2 }, ReturnValues: 'ALL_OLD' }))).toEqual({
      ok: { Attributes: { pk: 'cond', sk: '1', v: 1 } },
    });
  });

  it('update with a condition, ReturnValues and set/number arithmetic; delete with a failing condition', async () => {
    const update = (d: Driver, t: string, expected: number) =>
      d.update({
        TableName: t,
        Key: { pk: 'cond', sk: '1' },
        UpdateExpression: 'SET v = v + :one, tags = list_append(if_not_exists(tags, :none), :tag) ADD seen :s REMOVE gone',
        ConditionExpression: 'v = :expected',
        ExpressionAttributeValues: { ':one': 1, ':none': [], ':tag': ['t'], ':s': new Set(['x']), ':expected': expected },
        ReturnValues: 'ALL_NEW',
      });
    const updated = await both((d, t) => update(d, t, 2));
    expect(updated.ok.Attributes).toMatchObject({ v: 3, tags: ['t'], seen: { $set: ['x'] } });
    expect((await both((d, t) => update(d, t, 2))).error.name).toBe('ConditionalCheckFailedException');
    const del = await both((d, t) =>
      d.delete({
        TableName: t,
        Key: { pk: 'cond', sk: '1' },
        ConditionExpression: 'v = :nope',
        ExpressionAttributeValues: { ':nope': 0 },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    expect(del.error).toMatchObject({ name: 'ConditionalCheckFailedException', Item: { v: { N: '3' } } });
    expect(
      (await both((d, t) => d.update({ TableName: t, Key: { pk: 'cond', sk: '1' }, UpdateExpression: 'SET #x = :v', ExpressionAttributeValues: { ':v': 1 } })))
        .error.name,
    ).toBe('ValidationException');
  });

  it('batch write and batch get', async () => {
    const items = Array.from({ length: 25 }, (_, i) => ({ pk: 'page', sk: `item-${String(i).padStart(2, '0')}`, i, half: i % 2 === 0 }));
    expect(await both((d, t) => d.batchWrite({ RequestItems: { [t]: items.map((Item) => ({ PutRequest: { Item } })) } }))).toEqual({
      ok: { UnprocessedItems: {} },
    });
    const got = await both((d, t) =>
      d.batchGet({
        RequestItems: {
          [t]: {
            Keys: [
              { pk: 'page', sk: 'item-03' },
              { pk: 'page', sk: 'item-20' },
              { pk: 'page', sk: 'missing' },
            ],
          },
        },
      }),
    );
    expect((got.ok.Responses['<table>'] as Array<{ i: number }>).map((x) => x.i).sort((a, b) => a - b)).toEqual([3, 20]);
    expect(await both((d, t) => d.batchWrite({ RequestItems: { [t]: [{ DeleteRequest: { Key: { pk: 'page', sk: 'item-24' } } }] } }))).toEqual({
      ok: { UnprocessedItems: {} },
    });
  });

  it('query pages with Limit and ExclusiveStartKey, forwards and backwards, with a filter', async () => {
    for (const forward of [true, false]) {
      let start: unknown;
      const seen: number[] = [];
      let pages = 0;
      do {
        const page = await both((d, t) =>
          d.query({
            TableName: t,
            KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
            FilterExpression: 'half = :h',
            ExpressionAttributeValues: { ':pk': 'page', ':p': 'item-', ':h': true },
            Limit: 7,
            ScanIndexForward: forward,
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        );
        seen.push(...(page.ok.Items as Array<{ i: number }>).map((x) => x.i));
        start = page.ok.LastEvaluatedKey;
        pages++;
      } while (start);
      const evens = Array.from({ length: 12 }, (_, k) => k * 2);
      expect(seen).toEqual(forward ? evens : [...evens].reverse());
      expect(pages).toBeGreaterThan(3);
    }
  });

  it('transactions: a write that goes through, and one cancelled with its reasons', async () => {
    const tx = (d: Driver, t: string, expected: number) =>
      d.transactWrite({
        TransactItems: [
          { Put: { TableName: t, Item: { pk: 'tx', sk: 'a', v: 1 } } },
          {
            Update: {
              TableName: t,
              Key: { pk: 'cond', sk: '1' },
              UpdateExpression: 'SET v = :v',
              ConditionExpression: 'v = :e',
              ExpressionAttributeValues: { ':v': 10, ':e': expected },
            },
          },
          { ConditionCheck: { TableName: t, Key: { pk: 'doc', sk: 'rich' }, ConditionExpression: 'attribute_exists(pk)' } },
        ],
      });
    expect(await both((d, t) => tx(d, t, 3))).toEqual({ ok: {} });
    const cancelled = await both((d, t) => tx(d, t, 3));
    expect(cancelled.error.name).toBe('TransactionCanceledException');
    expect(cancelled.error.CancellationReasons.map((r: { Code: string }) => r.Code)).toEqual(['None', 'ConditionalCheckFailed', 'None']);
    expect(await both((d, t) => d.get({ TableName: t, Key: { pk: 'cond', sk: '1' }, ConsistentRead: true }))).toMatchObject({ ok: { Item: { v: 10 } } });
  });
});
