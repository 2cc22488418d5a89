import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { DocumentClient, fromWire, toWire, type WireMap } from '../../functions/shared/db/document';

/** What went over the wire: JSON, as the protocol client sends it. */
const onWire = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

describe('marshalling (the DocumentClient options of this project)', () => {
  it('drops undefined values at every level', () => {
    expect(onWire(toWire({ a: 'x', gone: undefined, m: { keep: 1, gone: undefined }, l: [1, undefined, 'two'] }))).toEqual({
      a: { S: 'x' },
      m: { M: { keep: { N: '1' } } },
      l: { L: [{ N: '1' }, { S: 'two' }] },
    });
  });

  it('nests maps and lists, keeps empty strings, null and booleans', () => {
    const item = { pk: 'p', empty: '', none: null, yes: true, no: false, deep: { list: [{ a: [[]] }, 'x'], map: {} } };
    const wire = toWire(item);
    expect(onWire(wire)).toEqual({
      pk: { S: 'p' },
      empty: { S: '' },
      none: { NULL: true },
      yes: { BOOL: true },
      no: { BOOL: false },
      deep: { M: { list: { L: [{ M: { a: { L: [{ L: [] }] } } }, { S: 'x' }] }, map: { M: {} } } },
    });
    expect(fromWire(onWire(wire) as WireMap)).toEqual(item);
  });

  it('sends numbers as N strings and reads them back as JS numbers', () => {
    const item = { int: 42, neg: -7, float: 0.1, zero: 0, max: Number.MAX_SAFE_INTEGER };
    const wire = onWire(toWire(item));
    expect(wire).toEqual({ int: { N: '42' }, neg: { N: '-7' }, float: { N: '0.1' }, zero: { N: '0' }, max: { N: '9007199254740991' } });
    const back = fromWire(wire as WireMap);
    expect(back).toEqual(item);
    expect(typeof back.int).toBe('number');
  });

  it('refuses numbers it cannot store exactly, and reads an unsafe integer as a BigInt', () => {
    expect(() => toWire({ n: Number.MAX_SAFE_INTEGER + 2 })).toThrow(/MAX_SAFE_INTEGER/);
    expect(() => toWire({ n: Number.NaN })).toThrow(/NaN/);
    expect(fromWire({ n: { N: '123456789012345678901234567890' } })).toEqual({ n: 123456789012345678901234567890n });
  });

  it('maps class instances, and sets to SS/NS', () => {
    class Point {
      constructor(
        readonly x: number,
        readonly y: number,
      ) {}
    }
    expect(onWire(toWire({ p: new Point(1, 2), ss: new Set(['a', 'b']), ns: new Set([1, 2]) }))).toEqual({
      p: { M: { x: { N: '1' }, y: { N: '2' } } },
      ss: { SS: ['a', 'b'] },
      ns: { NS: ['1', '2'] },
    });
    expect(fromWire({ ss: { SS: ['a'] }, ns: { NS: ['1'] } })).toEqual({ ss: new Set(['a']), ns: new Set([1]) });
  });

  it('carries binary values as base64 and returns them as Uint8Array, nested too', () => {
    const body = Buffer.from('héllo binary');
    const wire = onWire(toWire({ body, nested: { l: [new Uint8Array([0, 255])] }, set: new Set([Buffer.from('a'), Buffer.from('b')]) }));
    expect(wire).toEqual({
      body: { B: body.toString('base64') },
      nested: { M: { l: { L: [{ B: 'AP8=' }] } } },
      set: { BS: ['YQ==', 'Yg=='] },
    });
    const back = fromWire(wire as WireMap) as { body: Uint8Array; nested: { l: Uint8Array[] }; set: Set<Uint8Array> };
    expect(back.body).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(back.body).toString()).toBe('héllo binary');
    expect([...back.nested.l[0]!]).toEqual([0, 255]);
    expect([...back.set].map((b) => Buffer.from(b).toString())).toEqual(['a', 'b']);
  });

  it('does not change the caller’s objects', () => {
    const body = Buffer.from('x');
    const item = { body, m: { a: 1 } };
    toWire(item);
    expect(item).toEqual({ body: Buffer.from('x'), m: { a: 1 } });
    expect(item.body).toBe(body);
  });

  it('gives what marshall() gives with the same options, for JSON-shaped items and every other kind of value', () => {
    class Point {
      constructor(
        public x: number,
        public y?: number,
      ) {}
    }
    const options = { removeUndefinedValues: true, convertClassInstanceToMap: true };
    const nullProto = Object.assign(Object.create(null) as Record<string, unknown>, { a: 1, b: [true, null] });
    const items: Array<Record<string, unknown>> = [
      { pk: 'WS#1', sk: 'LOG#2', status: 200, latency_ms: 3.25, cost: 0.0000123, tiny: 1.5e-7, negative: -42, zero: -0, ok: true, error: null },
      { usage: { prompt_tokens: 12, details: { cached: 0 } }, tags: ['a', '', 'c'], nested: [[1, [2, { x: 'y' }]], {}], empty: {}, none: [] },
      // biome-ignore lint/suspicious/noSparseArray: a hole is one of the values marshall() skips
      { sparse: [1, , 3], gaps: [undefined, 'x', () => 1], fn: () => 1, gone: undefined, m: { gone: undefined, f: () => 2 } },
      { nullProto, top: Number.MAX_SAFE_INTEGER, bottom: Number.MIN_SAFE_INTEGER },
      { set: new Set(['a', 'b']), numbers: new Set([1, 2]) },
      { point: new Point(1), date: new Date(0), map: new Map([['k', 1]]) },
      { inList: [1, new Set(['s'])], inMap: { p: new Point(2, 3) } },
    ];
    for (const item of items) expect(toWire(item)).toEqual(marshall(item, options));
    for (const bad of [{ n: Number.NaN }, { n: Number.POSITIVE_INFINITY }, { n: 2 ** 60 }, { deep: { list: [1e300 * 10] } }]) {
      expect(() => marshall(bad, options)).toThrow();
      expect(() => toWire(bad)).toThrow();
    }
    expect(toWire(new Point(5, 6) as unknown as Record<string, unknown>)).toEqual(marshall(new Point(5, 6), options));
  });
});

describe('DocumentClient requests and answers', () => {
  /** A client whose operations are recorded and answered from a table. */
  function recording(answers: Record<string, unknown> = {}) {
    const sent: Array<{ operation: string; input: unknown }> = [];
    const client = new DocumentClient(async (operation, input) => {
      sent.push({ operation, input: onWire(input) });
      return onWire(answers[operation] ?? {}) as Record<string, unknown>;
    });
    return { client, sent };
  }

  it('GetItem: marshals the key, unmarshals the item; no item stays undefined', async () => {
    const { client, sent } = recording({ GetItem: { Item: { pk: { S: 'a' }, n: { N: '1' } } } });
    expect((await client.get({ TableName: 't', Key: { pk: 'a', sk: 'b' }, ConsistentRead: true })).Item).toEqual({ pk: 'a', n: 1 });
    expect(sent).toEqual([{ operation: 'GetItem', input: { TableName: 't', Key: { pk: { S: 'a' }, sk: { S: 'b' } }, ConsistentRead: true } }]);
    const empty = recording();
    expect((await empty.client.get({ TableName: 't', Key: { pk: 'a' } })).Item).toBeUndefined();
  });

  it('PutItem, UpdateItem, DeleteItem: item, key and expression values marshalled; names and expressions as given', async () => {
    const { client, sent } = recording({ UpdateItem: { Attributes: { pk: { S: 'a' }, n: { N: '2' } } } });
    await client.put({ TableName: 't', Item: { pk: 'a', x: undefined }, ConditionExpression: 'attribute_not_exists(pk)' });
    const updated = await client.update({
      TableName: 't',
      Key: { pk: 'a' },
      UpdateExpression: 'SET #n = :n',
      ConditionExpression: '#n < :n',
      ExpressionAttributeNames: { '#n': 'n' },
      ExpressionAttributeValues: { ':n': 2 },
      ReturnValues: 'ALL_NEW',
    });
    await client.delete({ TableName: 't', Key: { pk: 'a' }, ConditionExpression: undefined });
    expect(updated.Attributes).toEqual({ pk: 'a', n: 2 });
    expect(sent).toEqual([
      { operation: 'PutItem', input: { TableName: 't', Item: { pk: { S: 'a' } }, ConditionExpression: 'attribute_not_exists(pk)' } },
      {
        operation: 'UpdateItem',
        input: {
          TableName: 't',
          Key: { pk: { S: 'a' } },
          UpdateExpression: 'SET #n = :n',
          ConditionExpression: '#n < :n',
          ExpressionAttributeNames: { '#n': 'n' },
          ExpressionAttributeValues: { ':n': { N: '2' } },
          ReturnValues: 'ALL_NEW',
        },
      },
      { operation: 'DeleteItem', input: { TableName: 't', Key: { pk: { S: 'a' } } } },
    ]);
  });

  it('Query and Scan: start key and values marshalled; items and the last key unmarshalled', async () => {
    const page = { Items: [{ pk: { S: 'a' }, sk: { S: '1' } }], LastEvaluatedKey: { pk: { S: 'a' }, sk: { S: '1' } }, Count: 1, ScannedCount: 1 };
    const { client, sent } = recording({ Query: page, Scan: { Items: [] } });
    const out = await client.query({
      TableName: 't',
      IndexName: 'gsi1',
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': 'a' },
      ExclusiveStartKey: { pk: 'a', sk: '0' },
      Limit: 5,
    });
    expect(out).toMatchObject({ Items: [{ pk: 'a', sk: '1' }], LastEvaluatedKey: { pk: 'a', sk: '1' }, Count: 1 });
    expect(sent[0]!.input).toEqual({
      TableName: 't',
      IndexName: 'gsi1',
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': { S: 'a' } },
      ExclusiveStartKey: { pk: { S: 'a' }, sk: { S: '0' } },
      Limit: 5,
    });
    const scanned = await client.scan({ TableName: 't' });
    expect(scanned.Items).toEqual([]);
    expect(scanned.LastEvaluatedKey).toBeUndefined();
  });

  it('TransactWriteItems: every kind of entry marshalled', async () => {
    const { client, sent } = recording();
    await client.transactWrite({
      TransactItems: [
        { Put: { TableName: 't', Item: { pk: 'a', n: 1 }, ConditionExpression: 'attribute_not_exists(pk)' } },
        { Update: { TableName: 't', Key: { pk: 'b' }, UpdateExpression: 'SET v = :v', ExpressionAttributeValues: { ':v': [1] } } },
        { Delete: { TableName: 't', Key: { pk: 'c' } } },
        {
          ConditionCheck: {
            TableName: 't',
            Key: { pk: 'd' },
            ConditionExpression: '#s = :s',
            ExpressionAttributeNames: { '#s': 's' },
            ExpressionAttributeValues: { ':s': 'ok' },
          },
        },
      ],
    });
    expect(sent).toEqual([
      {
        operation: 'TransactWriteItems',
        input: {
          TransactItems: [
            { Put: { TableName: 't', Item: { pk: { S: 'a' }, n: { N: '1' } }, ConditionExpression: 'attribute_not_exists(pk)' } },
            { Update: { TableName: 't', Key: { pk: { S: 'b' } }, UpdateExpression: 'SET v = :v', ExpressionAttributeValues: { ':v': { L: [{ N: '1' }] } } } },
            { Delete: { TableName: 't', Key: { pk: { S: 'c' } } } },
            {
              ConditionCheck: {
                TableName: 't',
                Key: { pk: { S: 'd' } },
                ConditionExpression: '#s = :s',
                ExpressionAttributeNames: { '#s': 's' },
                ExpressionAttributeValues: { ':s': { S: 'ok' } },
              },
            },
          ],
        },
      },
    ]);
  });

  it('BatchWriteItem: requests marshalled, unprocessed ones handed back as JavaScript values', async () => {
    const { client, sent } = recording({
      BatchWriteItem: {
        UnprocessedItems: { t: [{ PutRequest: { Item: { pk: { S: 'a' }, n: { N: '3' } } } }, { DeleteRequest: { Key: { pk: { S: 'b' } } } }] },
      },
    });
    const out = await client.batchWrite({ RequestItems: { t: [{ PutRequest: { Item: { pk: 'a', n: 3 } } }, { DeleteRequest: { Key: { pk: 'b' } } }] } });
    expect(sent[0]).toEqual({
      operation: 'BatchWriteItem',
      input: { RequestItems: { t: [{ PutRequest: { Item: { pk: { S: 'a' }, n: { N: '3' } } } }, { DeleteRequest: { Key: { pk: { S: 'b' } } } }] } },
    });
    expect(out.UnprocessedItems).toEqual({ t: [{ PutRequest: { Item: { pk: 'a', n: 3 } } }, { DeleteRequest: { Key: { pk: 'b' } } }] });
    const done = recording({ BatchWriteItem: { UnprocessedItems: {} } });
    expect((await done.client.batchWrite({ RequestItems: { t: [] } })).UnprocessedItems).toEqual({});
  });
});
