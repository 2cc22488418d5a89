import { describe, expect, it } from 'vitest';
import { sharedReads } from '../../functions/shared/db/shared-reads';

describe('shared reads', () => {
  it('reads asked for while the same item is being read share that read; others read on their own', async () => {
    const read = sharedReads<number>();
    let calls = 0;
    let release!: (v: number) => void;
    const slow = () => {
      calls++;
      return new Promise<number>((r) => (release = r));
    };
    const together = [read('a', slow), read('a', slow), read('a', slow)];
    const other = read('b', async () => {
      calls++;
      return 7;
    });
    expect(calls).toBe(2);
    release(41);
    expect(await Promise.all(together)).toEqual([41, 41, 41]);
    expect(await other).toBe(7);
    // The read has ended: the next one goes to storage again.
    expect(await read('a', async () => ++calls)).toBe(3);
  });

  it('a failed read fails the requests that shared it, not the next one', async () => {
    const read = sharedReads<number>();
    const failing = () => Promise.reject(new Error('throttled'));
    await expect(Promise.all([read('a', failing), read('a', failing)])).rejects.toThrow('throttled');
    expect(await read('a', async () => 1)).toBe(1);
  });
});
