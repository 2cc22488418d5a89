import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startTestGateway } from '../support/gateway';

// functions/ modules are imported after the gateway (and its tables) exist.
type Ops = typeof import('../../functions/shared/db/ops');
let gw: LocalGateway;
let ops: Ops;
let batchedPuts: typeof import('../../functions/shared/db/batched-puts').batchedPuts;
let storageCalls: Record<string, number>;

beforeAll(async () => {
  gw = await startTestGateway();
  ops = await import('../../functions/shared/db/ops');
  ({ batchedPuts } = await import('../../functions/shared/db/batched-puts'));
  ({ storageCalls } = await import('../../functions/shared/db/client'));
});
afterAll(async () => {
  await gw?.stop();
});

const batchCalls = () => Object.entries(storageCalls).reduce((n, [name, c]) => (name.startsWith('BatchWrite') ? n + c : n), 0);
const putCalls = () => Object.entries(storageCalls).reduce((n, [name, c]) => (name.startsWith('Put') ? n + c : n), 0);

describe('batchedPuts', () => {
  it('concurrent puts share BatchWriteItem calls, and every caller learns its item is stored', async () => {
    const put = batchedPuts('logs');
    const pk = `TEST#batched#${Date.now()}`;
    const before = batchCalls();
    await Promise.all(Array.from({ length: 120 }, (_, i) => put({ pk, sk: `item-${String(i).padStart(4, '0')}`, n: i })));
    const calls = batchCalls() - before;
    // 120 items need at least 5 calls of 25; far fewer than one per item.
    expect(calls).toBeGreaterThanOrEqual(5);
    expect(calls).toBeLessThan(30);
    const stored = await ops.queryAll<{ n: number }>('logs', pk, 'item-');
    expect(stored.map((s) => s.n).sort((a, b) => a - b)).toEqual(Array.from({ length: 120 }, (_, i) => i));
  });

  it('one put alone is one call', async () => {
    const put = batchedPuts('logs');
    const pk = `TEST#single#${Date.now()}`;
    const before = batchCalls();
    await put({ pk, sk: 'a' });
    expect(batchCalls() - before).toBe(1);
    expect(await ops.getItem('logs', { pk, sk: 'a' })).toEqual({ pk, sk: 'a' });
  });

  it('an item DynamoDB refuses fails alone: its neighbours in the group are stored', async () => {
    const put = batchedPuts('logs');
    const pk = `TEST#bad#${Date.now()}`;
    const tooBig = 'x'.repeat(410 * 1024); // over DynamoDB's 400 KB item limit
    const beforePuts = putCalls();
    const results = await Promise.allSettled([put({ pk, sk: 'item-ok-1' }), put({ pk, sk: 'item-too-big', body: tooBig }), put({ pk, sk: 'item-ok-2' })]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(putCalls() - beforePuts).toBe(3);
    const stored = await ops.queryAll<{ sk: string }>('logs', pk, 'item-');
    expect(stored.map((s) => s.sk).sort()).toEqual(['item-ok-1', 'item-ok-2']);
  });

  it('what goes with a group (onSend) starts with its write, gets the tags of the group, and every caller waits for it', async () => {
    const sent: number[][] = [];
    let release!: () => void;
    const alongside = new Promise<void>((r) => (release = r));
    const put = batchedPuts<number>('logs', {
      waitMs: () => 20,
      onSend: (tags) => {
        sent.push(tags);
        return alongside;
      },
    });
    const pk = `TEST#alongside#${Date.now()}`;
    let settled = 0;
    const puts = [put({ pk, sk: 'item-a' }, 1), put({ pk, sk: 'item-b' }), put({ pk, sk: 'item-c' }, 3)].map((p) => p.then(() => settled++));
    for (let i = 0; i < 100 && (await ops.queryAll('logs', pk, 'item-')).length < 3; i++) await new Promise((r) => setTimeout(r, 50));
    expect(sent).toEqual([[1, 3]]);
    // The items are stored; their callers still wait for what went with them.
    expect(settled).toBe(0);
    release();
    await Promise.all(puts);
    expect(settled).toBe(3);
  });

  it('an onSend that throws before it returns a promise does not hold the group: its items are stored and their callers answered', async () => {
    const put = batchedPuts<number>('logs', {
      onSend: () => {
        throw new Error('journal full');
      },
    });
    const pk = `TEST#onsend-throws#${Date.now()}`;
    await Promise.all([put({ pk, sk: 'item-a' }, 1), put({ pk, sk: 'item-b' }, 2)]);
    expect((await ops.queryAll('logs', pk, 'item-')).length).toBe(2);
  });

  it('gives each group in flight its own slot, and a slot to a later group only once what went with the earlier one has settled', async () => {
    const holders = new Map<number, number>();
    const order: Array<[number, number]> = [];
    const releases: Array<() => void> = [];
    const put = batchedPuts<number>('logs', {
      onSend: (tags, slot) => {
        // No other group holds this slot while its writes or its onSend are unsettled.
        expect(holders.has(slot)).toBe(false);
        holders.set(slot, tags[0]!);
        order.push([tags[0]!, slot]);
        let released = false;
        return new Promise<void>((resolve) =>
          releases.push(() => {
            if (released) return;
            released = true;
            holders.delete(slot);
            resolve();
          }),
        );
      },
    });
    const pk = `TEST#slots#${Date.now()}`;
    // 10 full groups of 25: 8 go at once (one per slot), the other 2 wait for a slot.
    const puts = Array.from({ length: 250 }, (_, i) => put({ pk, sk: `item-${String(i).padStart(4, '0')}` }, Math.floor(i / 25)));
    for (let i = 0; i < 100 && order.length < 8; i++) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 200));
    expect(order).toHaveLength(8);
    expect(new Set(order.map(([, slot]) => slot))).toEqual(new Set([0, 1, 2, 3, 4, 5, 6, 7]));
    releases[2]!();
    for (let i = 0; i < 100 && order.length < 9; i++) await new Promise((r) => setTimeout(r, 20));
    expect(order[8]![1]).toBe(order[2]![1]);
    for (let i = 0; i < 200 && order.length < 10; i++) {
      for (const release of releases) release();
      await new Promise((r) => setTimeout(r, 20));
    }
    for (const release of releases) release();
    await Promise.all(puts);
    expect(order.map(([group]) => group).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});
