/**
 * Concurrent reads of the same item share one round trip: a read asked for while the same
 * item's read is in flight gets that read's answer. For the strongly consistent reads of
 * admission (a budget's or a tokens policy's counter), the joining request sees the item as
 * of a read that started at most one round trip before it arrived, as if it had arrived that
 * much earlier: the limits' overshoot bounds count it among the requests in flight
 * (docs/usage.md, "Counters at scale"). A busy process with many requests on one shard makes
 * one read per round trip instead of one per request.
 */
export function sharedReads<T>(): (id: string, read: () => Promise<T>) => Promise<T> {
  const inFlight = new Map<string, Promise<T>>();
  return (id, read) => {
    const pending = inFlight.get(id);
    if (pending) return pending;
    const started = read().finally(() => inFlight.delete(id));
    inFlight.set(id, started);
    return started;
  };
}
