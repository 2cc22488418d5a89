import { describe, expect, it } from 'vitest';
import { itemBytes, numberBytes, valueBytes, writeUnits } from '../../bench/lib/dynamo-size';
import { busiestShardWrites, labelPartition, shardFamily, summariseHeat } from '../../bench/lib/heat';
import { chargeWrite, planWrites } from '../../bench/lib/heat-recorder';

describe('DynamoDB item size (the heat instrument)', () => {
  it('counts a number by its significant digits: one byte per two, plus one', () => {
    expect(numberBytes('7')).toBe(2);
    expect(numberBytes('123')).toBe(3);
    expect(numberBytes('1000')).toBe(2);
    expect(numberBytes('-0.00125')).toBe(3);
    expect(numberBytes('1234567890')).toBe(6);
  });

  it('counts strings in UTF-8 bytes, binary decoded, booleans and nulls as one byte', () => {
    expect(valueBytes({ S: 'héllo' })).toBe(6);
    expect(valueBytes({ B: Buffer.from('abcd').toString('base64') })).toBe(4);
    expect(valueBytes({ B: new Uint8Array(3) })).toBe(3);
    expect(valueBytes({ BOOL: false })).toBe(1);
    expect(valueBytes({ NULL: true })).toBe(1);
    expect(valueBytes({ SS: ['ab', 'c'] })).toBe(3);
  });

  it('adds 3 bytes to a list or map and one per element', () => {
    expect(valueBytes({ L: [{ S: 'ab' }, { N: '1' }] })).toBe(3 + (2 + 1) + (2 + 1));
    expect(valueBytes({ M: { a: { S: 'xy' } } })).toBe(3 + (1 + 2 + 1));
  });

  it('sizes an item as its attribute names plus values', () => {
    expect(itemBytes({ pk: { S: 'abc' }, n: { N: '12' } })).toBe(2 + 3 + 1 + 2);
  });

  it('charges one write unit per KB started, at least one, twice in a transaction', () => {
    expect(writeUnits(0)).toBe(1);
    expect(writeUnits(1024)).toBe(1);
    expect(writeUnits(1025)).toBe(2);
    expect(writeUnits(1025, true)).toBe(4);
  });
});

const logs = {
  name: 'logs',
  partitionKey: 'pk',
  indexes: [
    { name: 'gsi1', partitionKey: 'gsi1pk' },
    { name: 'meta_environment', partitionKey: 'meta_environment' },
  ],
};

describe('where a write lands', () => {
  it('reads the items of every write operation from its request body', () => {
    const item = { pk: { S: 'A' } };
    expect(planWrites('PutItem', { TableName: 't', Item: item })).toEqual([{ table: 't', kind: 'put', item, transactional: false }]);
    expect(
      planWrites('BatchWriteItem', { RequestItems: { t: [{ PutRequest: { Item: item } }, { DeleteRequest: { Key: item } }] } }).map((p) => p.kind),
    ).toEqual(['put', 'delete']);
    expect(
      planWrites('TransactWriteItems', {
        TransactItems: [{ Put: { TableName: 't', Item: item } }, { Update: { TableName: 'u', Key: item } }, { ConditionCheck: { TableName: 'u', Key: item } }],
      }).map((p) => [p.table, p.kind, p.transactional]),
    ).toEqual([
      ['t', 'put', true],
      ['u', 'update', true],
      ['u', 'check', true],
    ]);
    expect(planWrites('GetItem', { TableName: 't' })).toEqual([]);
  });

  it('charges the base partition and every index partition the item is in', () => {
    const item = { pk: { S: 'WS#w#LOG' }, sk: { S: 'x'.repeat(1100) }, meta_environment: { S: 'WS#w#prod' } };
    const out = chargeWrite({ table: 'p-logs', kind: 'put', item, transactional: false }, logs, true);
    expect(out.map((w) => [w.target, w.partition, w.units])).toEqual([
      ['logs', 'WS#w#LOG', 2],
      ['logs/meta_environment', 'WS#w#prod', 2],
    ]);
  });

  it('charges a transactional update twice on the base table, by the larger of before and after, and once on the index', () => {
    const before = { pk: { S: 'C' }, n: { N: '1' }, pad: { S: 'x'.repeat(2000) }, gsi1pk: { S: 'G' } };
    const after = { pk: { S: 'C' }, n: { N: '2' }, gsi1pk: { S: 'G' } };
    const out = chargeWrite({ table: 'p-logs', kind: 'update', key: { pk: { S: 'C' } }, transactional: true, before, after }, logs, true);
    expect(out.map((w) => [w.target, w.partition, w.units])).toEqual([
      ['logs', 'C', 4],
      ['logs/gsi1', 'G', 1],
    ]);
  });

  it('charges a delete in the old index partition when an update moves the item', () => {
    const before = { pk: { S: 'C' }, meta_environment: { S: 'old' } };
    const after = { pk: { S: 'C' }, meta_environment: { S: 'new' } };
    const out = chargeWrite({ table: 'p-logs', kind: 'update', key: { pk: { S: 'C' } }, transactional: false, before, after }, logs, true);
    expect(out.map((w) => w.partition)).toEqual(['C', 'new', 'old']);
  });

  it('charges a refused conditional write on the base table only', () => {
    const item = { pk: { S: 'C' }, meta_environment: { S: 'prod' } };
    const out = chargeWrite({ table: 'p-logs', kind: 'put', item, transactional: false }, logs, false);
    expect(out.map((w) => w.target)).toEqual(['logs']);
  });
});

describe('the heat summary', () => {
  const w = (target: string, partition: string, units: number) => ({ target, partition, units, bytes: units * 1000 });

  it('ranks partition keys by units and scales them to 10,000 req/s against the 500 WCU goal', () => {
    const writes = [
      ...Array.from({ length: 100 }, () => w('logs', 'LOG', 2)),
      ...Array.from({ length: 100 }, (_, i) => w('logs/meta_user', `u${i % 50}`, 2)),
      ...Array.from({ length: 3 }, () => w('usage', 'RL', 1)),
    ];
    const s = summariseHeat(writes, 100);
    expect(s.hottest).toMatchObject({ target: 'logs', partition: 'LOG', writes: 100, units: 200, wcuPer1000Rps: 2000, wcuAtTarget: 20000, withinGoal: false });
    // Ties (every user at 4 units) are ordered by name, so the ranking is stable between runs.
    expect(s.top.map((r) => r.partition)).toEqual(['LOG', 'u0', 'u1', 'u10', 'u11', 'u12', 'u13', 'u14', 'u15', 'u16']);
    expect(s.top[1]).toMatchObject({ units: 4, wcuPer1000Rps: 40, wcuAtTarget: 400, wcuAtTargetWithRecordBytes: 400, withinGoal: true });
    expect(s.byTarget['logs/meta_user']).toMatchObject({ writesPerRequest: 1, unitsPerRequest: 2, partitions: 50 });
    expect(s.writesPerRequest).toBe(2.03);
    expect(s.unitsPerRequest).toBe(4.03);
  });

  it('also counts request-log records (and their index copies) at 2 KB at least, and judges the goal by the larger figure', () => {
    const writes = [
      ...Array.from({ length: 3 }, () => w('logs/meta_environment', 'prod', 1)),
      ...Array.from({ length: 4 }, () => w('usage', 'RL', 1)),
      w('logs', 'LOG', 3),
    ];
    const s = summariseHeat(writes, 100);
    expect(s.top.map((r) => [r.target, r.wcuAtTarget, r.wcuAtTargetWithRecordBytes, r.withinGoal])).toEqual([
      ['logs/meta_environment', 300, 600, false],
      ['usage', 400, 400, true],
      ['logs', 300, 300, true],
    ]);
  });

  it("knows the gateway's shard layouts: request-log partitions, spend counters, other counters", () => {
    expect(shardFamily('logs', 'WS#w#LOG#17')).toEqual({ family: 'WS#w#LOG#{shard}', shard: 17, picked: 'per-write' });
    expect(shardFamily('logs/meta_environment', 'WS#w#prod#3')).toEqual({ family: 'WS#w#prod#{shard}', shard: 3, picked: 'per-write' });
    expect(shardFamily('logs', 'LOG')).toBeUndefined();
    expect(shardFamily('usage', 'WS#w#SPEND#5#model')).toEqual({ family: 'WS#w#SPEND#{shard}#model', shard: 5, picked: 'per-write' });
    expect(shardFamily('usage', 'WS#w#SPEND#model')).toEqual({ family: 'WS#w#SPEND#{shard}#model', shard: 0, picked: 'per-write' });
    expect(shardFamily('usage', 'WS#w#BUD#b#all#s12')).toEqual({ family: 'WS#w#BUD#b#all#s{shard}', shard: 12, picked: 'per-process' });
    expect(shardFamily('usage', 'WS#w#BUD#b#all')).toEqual({ family: 'WS#w#BUD#b#all#s{shard}', shard: 0, picked: 'per-process' });
  });

  it('models the busiest of k random shards as the mean plus sqrt(2 ln k) standard deviations', () => {
    expect(busiestShardWrites(10_000, 1)).toBe(10_000);
    // 10,000 writes a second over 64 shards: 156.25 each, sd 12.5, about 2.88 sd above.
    expect(busiestShardWrites(10_000, 64)).toBeCloseTo(156.25 + Math.sqrt(2 * Math.log(64)) * 12.5, 6);
    expect(busiestShardWrites(10_000, 64)).toBeGreaterThan(190);
    expect(busiestShardWrites(10_000, 64)).toBeLessThan(193);
  });

  it('judges a sharded key by its modelled busiest shard, not by one short run scaled linearly', () => {
    // 1,000 requests, one log record each over 64 shards, one shard drawn unluckily often.
    const writes = Array.from({ length: 1000 }, (_, i) => w('logs', `WS#w#LOG#${i < 40 ? 0 : 1 + (i % 63)}`, 2));
    const s = summariseHeat(writes, 1000);
    expect(s.hottest).toMatchObject({ target: 'logs', partition: 'WS#w#LOG#{shard}', shards: 64, writes: 1000, units: 2000, withinGoal: true });
    expect(s.hottest!.wcuAtTarget).toBe(Math.round(2 * busiestShardWrites(10_000, 64)));
    // Scaled linearly, the unlucky shard (40 writes of 2 units) would read 800 WCU.
    expect(s.hottest!.busiestShardLinear).toBe(800);
  });

  it("scales a family written on one shard only (a busy process's home shard) as it is", () => {
    const writes = Array.from({ length: 100 }, () => w('usage', 'WS#w#RL#p#all#s7', 1));
    const s = summariseHeat(writes, 100);
    expect(s.hottest).toMatchObject({ partition: 'WS#w#RL#p#all#s7', shards: 1, wcuAtTarget: 10_000, withinGoal: false });
  });

  it("in a busy process, scales a limit's counter by processes: each writes its own shard, the busiest shard takes the processes that drew it", () => {
    // 100 requests at 1,000 req/s, 20 reservation writes on the process's shard: 10 such
    // processes make 10,000 req/s, 2,000 writes a second of this counter in all.
    const writes = [
      ...Array.from({ length: 20 }, () => w('usage', 'WS#w#RL#p#all#s7', 1)),
      ...Array.from({ length: 100 }, (_, i) => w('logs', `L#${i % 64}`, 1)),
    ];
    const over32 = summariseHeat(writes, 100, 10, 10_000, 500, { requestsPerSecond: 1000, shardsOf: (f) => (f === 'WS#w#RL#p#all#s{shard}' ? 32 : undefined) });
    const counter = over32.top.find((r) => r.target === 'usage')!;
    expect(counter).toMatchObject({ partition: 'WS#w#RL#p#all#s{shard}', shards: 32, writes: 20 });
    expect(counter.wcuAtTarget).toBe(Math.round((busiestShardWrites(10, 32) * 2000) / 10));
    // The request log's shards are drawn per write: as without the model.
    expect(over32.top.find((r) => r.target === 'logs')!.wcuAtTarget).toBe(Math.round(busiestShardWrites(10_000, 64)));
    // A counter of unknown shard count is one shard: every process on it, linear.
    const unknown = summariseHeat(writes, 100, 10, 10_000, 500, { requestsPerSecond: 1000, shardsOf: () => undefined });
    expect(unknown.top.find((r) => r.target === 'usage')).toMatchObject({ shards: 1, wcuAtTarget: 2000, withinGoal: false });
  });

  it('names ids in partition keys and shortens long ones', () => {
    expect(labelPartition('WS#ws_1#RL#pol_9#all', { ws_1: '<ws>', pol_9: '<policy>' })).toBe('WS#<ws>#RL#<policy>#all');
    expect(labelPartition('x'.repeat(100), {})).toHaveLength(90);
  });
});
