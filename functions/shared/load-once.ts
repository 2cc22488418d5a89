/**
 * A module loaded with `import()` on first use, then held: each `import()` of a module
 * already loaded still resolves its specifier and builds a promise (about 30 us of CPU on
 * Node 20, more under a loader hook), which a route that loads its code lazily would pay on
 * every request. A failed load is not remembered, so the next call tries again.
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () =>
    (loaded ??= load().catch((err: unknown) => {
      loaded = undefined;
      throw err;
    }));
}
