import { describe, expect, it } from 'vitest';
import { newId } from '../../functions/shared/ids';
import { shardOf } from '../../functions/shared/db/log-keys';
import { mergeSorted, type SortedSource } from '../../functions/shared/db/merged-list';

describe('the write shard of a request-log record', () => {
  it('is a function of the id alone, the same every time', () => {
    const id = newId('log_');
    expect(shardOf(id, 64)).toBe(shardOf(id, 64));
    expect(shardOf(id, 1)).toBe(0);
    expect(shardOf('log_01jcz0000000000000000000aa', 64)).toBe(shardOf('log_01jcz0000000000000000000aa', 64));
  });

  it('spreads one workspace at 10,000 records/s of 2 KB over 64 shards with every shard under 500 WCU', () => {
    // One second at 10,000 req/s: ids made as fast as one process makes them (same-millisecond ids
    // differ only in their last characters, the worst case for a hash over the id).
    const perSecond = 10_000;
    const wcuPerRecord = 2; // 2 KB records: one write unit per KB
    const counts = new Array<number>(64).fill(0);
    for (let i = 0; i < perSecond; i++) counts[shardOf(newId('log_'), 64)]!++;
    const hottest = Math.max(...counts) * wcuPerRecord;
    expect(hottest).toBeLessThan(500);
    expect(Math.min(...counts)).toBeGreaterThan(0);
  });
});

/** A partition's items in walk order, handed out `chunk` at a time, counting reads. */
function source(keys: string[], chunk: number) {
  let at = 0;
  const state = { reads: 0 };
  const read: SortedSource<string>['read'] = async () => {
    state.reads++;
    const items = keys.slice(at, at + chunk);
    at += chunk;
    return { items, done: at >= keys.length };
  };
  return { read, state };
}

describe('merging shards into one list', () => {
  const key = (s: string) => s;

  it('yields the first items of the union in order, newest first or oldest first', async () => {
    const a = ['09', '06', '03', '01'];
    const b = ['08', '07', '02'];
    const c = ['05', '04'];
    expect(await mergeSorted([source(a, 2), source(b, 1), source(c, 5)], key, 5, false)).toEqual(['09', '08', '07', '06', '05']);
    const asc = (xs: string[]) => [...xs].reverse();
    expect(await mergeSorted([source(asc(a), 3), source(asc(b), 1), source(asc(c), 1)], key, 100, true)).toEqual([
      '01',
      '02',
      '03',
      '04',
      '05',
      '06',
      '07',
      '08',
      '09',
    ]);
  });

  it('reads past empty chunks (a filter that kept nothing) and empty partitions', async () => {
    const sparse: SortedSource<string> = {
      read: (() => {
        const chunks = [[], [], ['5'], [], ['2']];
        let i = 0;
        return async () => ({ items: chunks[i++]!, done: i >= chunks.length });
      })(),
    };
    expect(await mergeSorted([sparse, source([], 3), source(['4', '3', '1'], 1)], key, 10, false)).toEqual(['5', '4', '3', '2', '1']);
  });

  it('places a record held by two partitions once', async () => {
    expect(await mergeSorted([source(['3', '2'], 2), source(['2', '1'], 2)], key, 10, false)).toEqual(['3', '2', '1']);
  });

  it('reads a partition again only when its next item is needed', async () => {
    const shards = Array.from({ length: 8 }, (_, s) =>
      source(
        Array.from({ length: 50 }, (_, i) => String(9000 - (i * 8 + s))),
        2,
      ),
    );
    const page = await mergeSorted(
      shards.map((s) => ({ read: s.read })),
      key,
      8,
      false,
    );
    expect(page).toEqual(Array.from({ length: 8 }, (_, i) => String(9000 - i)));
    for (const s of shards) expect(s.state.reads).toBe(1);
  });
});
