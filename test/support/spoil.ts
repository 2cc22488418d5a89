/**
 * Spoiling a JSON value at one place, for the malformed-input sweeps: every place of a value
 * (containers and leaves, however deep), and a copy with the value at one place removed or
 * replaced.
 */

/** Stands for "the place removed" among the wrong values. */
export const REMOVED = Symbol('removed');
/** What a place is spoiled with: removed, or a value of each other kind. */
export const WRONG: unknown[] = [REMOVED, null, 7, 'x', [], {}, true, [null]];

export type JsonPath = Array<string | number>;

/**
 * The wrong values a sweep sized for CI uses at its `n`th place: the removal always, and one
 * in `every` of the rest, rotating from place to place, so that neighbouring places meet
 * every kind.
 */
export const wrongAt = (n: number, every = 2): unknown[] => WRONG.filter((w, k) => w === REMOVED || (k + n) % every === 0);

/** Every place in a JSON value (containers and leaves), depth first. */
export function pathsOf(value: unknown, at: JsonPath = []): JsonPath[] {
  const below = Array.isArray(value)
    ? value.flatMap((v, i) => pathsOf(v, [...at, i]))
    : value && typeof value === 'object'
      ? Object.entries(value).flatMap(([k, v]) => pathsOf(v, [...at, k]))
      : [];
  return at.length ? [at, ...below] : below;
}

/** A copy of `value` with the place at `path` removed (REMOVED) or replaced by `wrong`. */
export function spoil<T>(value: T, path: JsonPath, wrong: unknown): T {
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let parent = copy;
  for (const step of path.slice(0, -1)) parent = parent[step] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (wrong !== REMOVED) parent[last] = wrong;
  else if (Array.isArray(parent)) parent.splice(last as number, 1);
  else delete parent[last];
  return copy as T;
}

/** How a spoil is named in a failure: `messages.0.content = null`. */
export const spoiled = (path: JsonPath, wrong: unknown) => `${path.join('.')} = ${wrong === REMOVED ? 'removed' : JSON.stringify(wrong)}`;
