import { beforeEach, describe, expect, it, vi } from 'vitest';

// The reservation logic against an in-memory counter with DynamoDB's conditional-increment
// semantics (the integration tests in test/integration/limiter.test.ts run it against
// DynamoDB Local). Each `import` after `vi.resetModules()` is a separate container: its own
// buckets, the same counter store.
const store = vi.hoisted(() => ({
  counts: new Map<string, number>(),
  calls: 0,
  failNext: 0,
  maxDelayMs: 0,
}));

vi.mock('../../functions/shared/db/ops', () => ({
  updateItem: async (_table: string, key: { pk: string; sk: string }, spec: { add: { count: number }; conditionValues: { ':max': number } }) => {
    store.calls++;
    await new Promise((r) => setTimeout(r, Math.random() * store.maxDelayMs));
    if (store.failNext > 0) {
      store.failNext--;
      throw Object.assign(new Error('storage unavailable'), { name: 'InternalServerError' });
    }
    const id = `${key.pk}|${key.sk}`;
    const current = store.counts.get(id);
    if (current !== undefined && current > spec.conditionValues[':max']) return undefined;
    const next = (current ?? 0) + spec.add.count;
    store.counts.set(id, next);
    return { count: next };
  },
}));

type Reservations = typeof import('../../functions/policies/reservations');
async function container(): Promise<Reservations> {
  vi.resetModules();
  return import('../../functions/policies/reservations');
}

const windowOf = (pk: string) => ({ pk, sk: 'requests#rpm#0', ttl: 0, endsAt: Date.now() + 60_000 });

beforeEach(() => {
  store.counts.clear();
  store.calls = 0;
  store.failNext = 0;
  store.maxDelayMs = 0;
});

describe('rate-limit reservations', () => {
  /** Three containers send waves of concurrent requests with pauses: at least 360 requests, more than any limit below. */
  async function race(limit: number, pk: string) {
    const containers = await Promise.all([container(), container(), container()]);
    let admitted = 0;
    await Promise.all(
      containers.map(async (c) => {
        for (let wave = 0; wave < 12; wave++) {
          const results = await Promise.all(Array.from({ length: 10 + Math.floor(Math.random() * 20) }, () => c.admitRequest(windowOf(pk), limit)));
          admitted += results.filter((r) => r.admitted).length;
          // As the gateway does once each admitted request's upstream has answered.
          c.refillAhead(windowOf(pk));
          await new Promise((r) => setTimeout(r, Math.random() * 4));
        }
      }),
    );
    return { admitted, counted: store.counts.get(`${pk}|requests#rpm#0`) ?? 0 };
  }

  it('three containers under random interleavings, reserving only for waiting requests: exactly the limit', async () => {
    store.maxDelayMs = 3;
    process.env.RATE_LIMIT_RESERVE_AHEAD_MS = '0'; // read by each container's fresh config
    try {
      for (const limit of [1, 7, 50, 333]) {
        const { admitted, counted } = await race(limit, `exact-${limit}`);
        expect(counted, `limit ${limit}`).toBe(limit);
        expect(admitted, `limit ${limit}`).toBe(limit);
      }
    } finally {
      delete process.env.RATE_LIMIT_RESERVE_AHEAD_MS;
    }
  });

  it('three containers reserving ahead: never more than the limit, and at most a block per container unused', async () => {
    store.maxDelayMs = 3;
    for (const limit of [1, 7, 50, 333]) {
      const { admitted, counted } = await race(limit, `ahead-${limit}`);
      expect(counted, `limit ${limit}`).toBeLessThanOrEqual(limit);
      expect(admitted, `limit ${limit}`).toBeLessThanOrEqual(counted);
      // A container that stops holds what it reserved ahead: each block at most 1/16 of what
      // was left, and a refill starts when half of one is used.
      expect(admitted, `limit ${limit}`).toBeGreaterThanOrEqual(limit - Math.ceil((3 * 1.5 * limit) / 16));
    }
  });

  it('busy containers reserve ahead of their traffic: few round trips, units handed out never exceed those counted', async () => {
    store.maxDelayMs = 2;
    const limit = 100_000;
    const containers = await Promise.all([container(), container()]);
    let admitted = 0;
    let requests = 0;
    await Promise.all(
      containers.map(async (c) => {
        const until = Date.now() + 400;
        while (Date.now() < until) {
          const r = await c.admitRequest(windowOf('ahead'), limit);
          requests++;
          if (r.admitted) admitted++;
          c.refillAhead(windowOf('ahead'));
          await new Promise((res) => setImmediate(res));
        }
      }),
    );
    const counted = store.counts.get('ahead|requests#rpm#0')!;
    expect(admitted).toBe(requests);
    expect(admitted).toBeLessThanOrEqual(counted);
    // Reserved ahead and not used when the traffic stopped: at most a block per container.
    expect(counted - admitted).toBeLessThanOrEqual(2 * 1_000);
    expect(store.calls).toBeLessThan(requests / 4);
  });

  it('sparse but steady traffic (one request at a time, 200 ms apart) finds a unit in hand: the next are reserved in the background', async () => {
    const c = await container();
    const limit = 1_000_000;
    const waitedForStorage: boolean[] = [];
    for (let i = 0; i < 6; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 200));
      const calls = store.calls;
      expect((await c.admitRequest(windowOf('sparse'), limit)).admitted).toBe(true);
      // A unit in hand resolves at once, with no reservation of its own.
      waitedForStorage.push(store.calls > calls);
      c.refillAhead(windowOf('sparse'));
    }
    // The first knows of no traffic; the second reserves itself and two ahead; from then on each finds one.
    expect(waitedForStorage).toEqual([true, true, false, false, false, false]);
    await new Promise((r) => setTimeout(r, 20));
    // Two units are held ahead when the traffic stops (at most three, right after a refill).
    expect(store.counts.get('sparse|requests#rpm#0')).toBe(8);
  });

  it('units ahead are refilled only when the request that used one says so (its upstream has answered), and a refill in flight leaves one in hand', async () => {
    const c = await container();
    const w = windowOf('deferred');
    for (let i = 0; i < 2; i++) {
      await c.admitRequest(w, 1_000_000);
      c.refillAhead(w);
    }
    expect(store.counts.get('deferred|requests#rpm#0')).toBe(4); // one, then itself and two ahead
    store.maxDelayMs = 50;
    const calls = store.calls;
    expect((await c.admitRequest(w, 1_000_000)).admitted).toBe(true);
    await new Promise((r) => setTimeout(r, 5));
    // Nothing reserved while the request is still before its upstream's answer.
    expect(store.calls).toBe(calls);
    c.refillAhead(w);
    await new Promise((r) => setImmediate(r));
    // The next request, arriving while that refill is on its way, still finds a unit.
    let settled = false;
    void c.admitRequest(w, 1_000_000).then(() => (settled = true));
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(true);
    expect(store.calls).toBe(calls + 1);
    // Let the refill land: the store is shared with the next test.
    await new Promise((r) => setTimeout(r, 60));
  });

  it('one reservation serves every request waiting in the same turn', async () => {
    const c = await container();
    const results = await Promise.all(Array.from({ length: 40 }, () => c.admitRequest(windowOf('burst'), 100)));
    expect(results.every((r) => r.admitted)).toBe(true);
    expect(results.map((r) => r.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(store.calls).toBe(1);
  });

  it('a storage error rejects the waiting requests; the next request reserves again', async () => {
    const c = await container();
    store.failNext = 1;
    const failed = await Promise.allSettled([c.admitRequest(windowOf('err'), 10), c.admitRequest(windowOf('err'), 10)]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect((failed[0] as PromiseRejectedResult).reason.message).toBe('storage unavailable');
    expect(await c.admitRequest(windowOf('err'), 10)).toEqual({ admitted: true, count: 1 });
  });

  it('a returned unit goes to the next request without a round trip; a full window refuses without one', async () => {
    const c = await container();
    const w = windowOf('give-back');
    expect(await c.admitRequest(w, 2)).toEqual({ admitted: true, count: 1 });
    expect(await c.admitRequest(w, 2)).toEqual({ admitted: true, count: 2 });
    c.returnUnit(w);
    const calls = store.calls;
    expect(await c.admitRequest(w, 2)).toEqual({ admitted: true, count: 2 });
    expect(await c.admitRequest(w, 2)).toEqual({ admitted: false, count: 2 });
    expect(store.calls).toBe(calls);
  });

  it('a new window starts from zero', async () => {
    const c = await container();
    expect((await c.admitRequest(windowOf('roll'), 1)).admitted).toBe(true);
    expect((await c.admitRequest(windowOf('roll'), 1)).admitted).toBe(false);
    expect(await c.admitRequest({ ...windowOf('roll'), sk: 'requests#rpm#60000' }, 1)).toEqual({ admitted: true, count: 1 });
  });
});
