/**
 * A small per-container cache for control-plane reads on the data plane's warm path
 *: entries live `ttlMs` (misses a shorter time), concurrent loads of one
 * key share a single storage round-trip, and writers in the same container `delete` the
 * entries they change. Other containers see a change within the TTL.
 *
 * Refresh ahead: a hit in the last quarter of an entry's life reloads it in the background
 * while the caller gets the current value, so a key in steady use never expires in front
 * of a request (no periodic storage read on the request path). A value is never served
 * longer than `ttlMs` after it was read: the refreshed entry's life counts from the read.
 */
interface Entry<V> {
  value: Promise<V | undefined>;
  expiresAt: number;
  ttlMs: number;
  refreshing: boolean;
}

/** The share of an entry's life, at its end, in which a hit refreshes it. */
const REFRESH_AHEAD_SHARE = 0.25;

export class TtlCache<V> {
  private readonly entries = new Map<string, Entry<V>>();

  constructor(
    private readonly ttlMs: () => number,
    private readonly maxEntries = 10_000,
    private readonly missTtlMs = 5_000,
  ) {}

  /**
   * A hit hands back the entry's own promise: not wrapped in another async function's, which
   * would cost a promise and three microtask turns per lookup, several times per request.
   */
  get(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const now = Date.now();
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > now) {
      if (!hit.refreshing && hit.expiresAt - now <= hit.ttlMs * REFRESH_AHEAD_SHARE) this.refresh(key, hit, load);
      return hit.value;
    }
    return this.load(key, hit, now, load);
  }

  private async load(key: string, expired: Entry<V> | undefined, now: number, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const ttl = this.ttlMs();
    const value = load();
    const entry: Entry<V> = { value, expiresAt: now + ttl, ttlMs: ttl, refreshing: false };
    if (ttl > 0) {
      if (!expired && this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
      this.entries.set(key, entry);
    }
    try {
      const result = await value;
      // A miss is kept only briefly, so a record created elsewhere shows up soon.
      if (result === undefined) this.shortenForMiss(entry, now);
      return result;
    } catch (err) {
      if (this.entries.get(key) === entry) this.entries.delete(key);
      throw err;
    }
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  private shortenForMiss(entry: Entry<V>, readAt: number): void {
    entry.ttlMs = Math.min(entry.ttlMs, this.missTtlMs);
    entry.expiresAt = Math.min(entry.expiresAt, readAt + entry.ttlMs);
  }

  private refresh(key: string, stale: Entry<V>, load: () => Promise<V | undefined>): void {
    stale.refreshing = true;
    const readAt = Date.now();
    load().then(
      (result) => {
        // A writer deleted or replaced the entry meanwhile: its change wins over this read.
        if (this.entries.get(key) !== stale) return;
        const ttl = this.ttlMs();
        const fresh: Entry<V> = { value: Promise.resolve(result), expiresAt: readAt + ttl, ttlMs: ttl, refreshing: false };
        if (result === undefined) this.shortenForMiss(fresh, readAt);
        this.entries.set(key, fresh);
      },
      // The current value stays until it expires; a later hit tries again.
      () => {
        stale.refreshing = false;
      },
    );
  }
}

/**
 * A workspace's records found by name (an id or a slug). Writers `forget` every name of
 * the record they changed, so this container sees the change at once.
 */
export class WorkspaceCache<V> {
  private readonly cache: TtlCache<V>;

  constructor(ttlMs: () => number, maxEntries?: number) {
    this.cache = new TtlCache<V>(ttlMs, maxEntries);
  }

  get(workspaceId: string, name: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    return this.cache.get(`${workspaceId}\u0000${name}`, load);
  }

  forget(workspaceId: string, ...names: string[]): void {
    for (const name of names) this.cache.delete(`${workspaceId}\u0000${name}`);
  }

  clear(): void {
    this.cache.clear();
  }
}
