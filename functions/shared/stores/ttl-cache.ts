/**
 * A small per-container cache for control-plane reads on the data plane's warm path
 * (DESIGN.md §9): entries live `ttlMs` (misses a shorter time), concurrent loads of one
 * key share a single storage round-trip, and writers in the same container `delete` the
 * entries they change. Other containers see a change within the TTL.
 */
interface Entry<V> {
  value: Promise<V | undefined>;
  expiresAt: number;
}

export class TtlCache<V> {
  private readonly entries = new Map<string, Entry<V>>();

  constructor(
    private readonly ttlMs: () => number,
    private readonly maxEntries = 10_000,
    private readonly missTtlMs = 5_000,
  ) {}

  async get(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const now = Date.now();
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > now) return hit.value;
    const ttl = this.ttlMs();
    const value = load();
    const entry: Entry<V> = { value, expiresAt: now + ttl };
    if (ttl > 0) {
      if (!hit && this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
      this.entries.set(key, entry);
    }
    try {
      const result = await value;
      // A miss is kept only briefly, so a record created elsewhere shows up soon.
      if (result === undefined) entry.expiresAt = Math.min(entry.expiresAt, now + Math.min(ttl, this.missTtlMs));
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
