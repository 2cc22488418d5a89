import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TtlCache } from '../../functions/shared/stores/ttl-cache';

/** A loader that answers from `values` in order and counts its calls; `gate` holds a call open. */
function loader<V>(...values: Array<V | undefined | Error>) {
  let calls = 0;
  let release: (() => void) | undefined;
  const fn = async () => {
    const value = values[Math.min(calls++, values.length - 1)];
    if (fn.gated) await new Promise<void>((r) => (release = r));
    if (value instanceof Error) throw value;
    return value;
  };
  fn.gated = false;
  fn.calls = () => calls;
  fn.release = () => release?.();
  return fn;
}

const settle = () => new Promise((r) => setImmediate(r));

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(1_000_000);
});
afterEach(() => vi.useRealTimers());

describe('TtlCache', () => {
  it('concurrent misses share one load; hits are served until the TTL ends', async () => {
    const cache = new TtlCache<string>(() => 1_000);
    const load = loader('a', 'b');
    expect(await Promise.all([cache.get('k', load), cache.get('k', load), cache.get('k', load)])).toEqual(['a', 'a', 'a']);
    expect(load.calls()).toBe(1);
    vi.advanceTimersByTime(700);
    expect(await cache.get('k', load)).toBe('a');
    expect(load.calls()).toBe(1);
    vi.advanceTimersByTime(301);
    expect(await cache.get('k', load)).toBe('b');
    expect(load.calls()).toBe(2);
  });

  it('a hit in the last quarter of the life returns the current value and refreshes it in the background', async () => {
    const cache = new TtlCache<string>(() => 1_000);
    const load = loader('old', 'new');
    await cache.get('k', load);
    vi.advanceTimersByTime(800);
    load.gated = true;
    expect(await Promise.race([cache.get('k', load), new Promise((r) => setTimeout(r, 50, 'blocked'))])).toBe('old');
    expect(await cache.get('k', load)).toBe('old'); // one refresh at a time
    expect(load.calls()).toBe(2);
    load.release();
    await settle();
    expect(await cache.get('k', load)).toBe('new');
    // The refreshed value lives a full TTL from its read (t = 800), not from the first load.
    vi.advanceTimersByTime(700);
    expect(await cache.get('k', load)).toBe('new');
    vi.advanceTimersByTime(301);
    load.gated = false;
    await cache.get('k', load);
    expect(load.calls()).toBe(3);
  });

  it('a refresh that fails leaves the current value until it expires', async () => {
    const cache = new TtlCache<string>(() => 1_000);
    const load = loader('v', new Error('storage down'), 'w');
    await cache.get('k', load);
    vi.advanceTimersByTime(900);
    expect(await cache.get('k', load)).toBe('v');
    await settle();
    expect(await cache.get('k', load)).toBe('v'); // the failed refresh is retried by this hit
    await settle();
    expect(load.calls()).toBe(3);
    expect(await cache.get('k', load)).toBe('w');
  });

  it('an entry a writer deleted while its refresh was in flight is not brought back by that refresh', async () => {
    const cache = new TtlCache<string>(() => 1_000);
    const load = loader('before', 'stale read');
    await cache.get('k', load);
    vi.advanceTimersByTime(900);
    load.gated = true;
    await cache.get('k', load);
    cache.delete('k');
    load.release();
    await settle();
    load.gated = false;
    const after = loader('after write');
    expect(await cache.get('k', after)).toBe('after write');
  });

  it('no refresh before the last quarter; a miss is kept only for the miss TTL', async () => {
    const cache = new TtlCache<string>(() => 10_000, 100, 2_000);
    const load = loader<string>(undefined, 'created');
    expect(await cache.get('k', load)).toBeUndefined();
    vi.advanceTimersByTime(1_000);
    expect(await cache.get('k', load)).toBeUndefined();
    expect(load.calls()).toBe(1); // 1 s into a 2 s miss: neither reloaded nor refreshed
    vi.advanceTimersByTime(1_001);
    expect(await cache.get('k', load)).toBe('created');
  });

  it('a load that throws is not cached', async () => {
    const cache = new TtlCache<string>(() => 1_000);
    const load = loader(new Error('boom'), 'ok');
    await expect(cache.get('k', load)).rejects.toThrow('boom');
    expect(await cache.get('k', load)).toBe('ok');
  });
});
