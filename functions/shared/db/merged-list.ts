import { GSI1, KEY, type TableName, type IndexKeys } from '../tables';
import { ddb, tableName } from './client';
import type { Page, PageRequest } from './list';

/** One list spread over several partitions (write shards) whose items share one sort-key order. */
export interface MergedListTarget {
  table: TableName;
  /** Partition key values, all read. */
  partitions: readonly string[];
  index?: 'gsi1' | IndexKeys;
  filter?: { expression: string; names?: Record<string, string>; values?: Record<string, unknown> };
}

/** At most this many queries of one listing in flight. */
const MAX_PARALLEL_QUERIES = 16;
/** Largest page asked of one partition (DynamoDB stops at 1 MB anyway). */
const MAX_CHUNK = 512;

type Item = Record<string, unknown>;

/** One partition's items in walk order, read a chunk at a time. */
export interface SortedSource<T> {
  /** The next chunk (possibly empty: a filter kept none of it); `done` once nothing follows. */
  read(): Promise<{ items: T[]; done: boolean }>;
}

interface SourceCursor<T> {
  source: SortedSource<T>;
  items: T[];
  next: number;
  done: boolean;
}

/**
 * The first `want` items of several sources, each in walk order (`forward`: ascending keys),
 * merged into that order (a k-way merge). A source is read only when its next item is needed
 * to decide the next place, at most `parallel` reads at once. An item whose key equals the
 * one placed just before it (the same record in two sources) is placed once.
 */
export async function mergeSorted<T>(
  sources: readonly SortedSource<T>[],
  keyOf: (item: T) => string,
  want: number,
  forward: boolean,
  parallel = MAX_PARALLEL_QUERIES,
): Promise<T[]> {
  const cursors: SourceCursor<T>[] = sources.map((source) => ({ source, items: [], next: 0, done: false }));
  const starved = (c: SourceCursor<T>) => c.next >= c.items.length && !c.done;
  async function refill(): Promise<void> {
    const empty = cursors.filter(starved);
    let i = 0;
    const lane = async () => {
      while (i < empty.length) {
        const cursor = empty[i++]!;
        const chunk = await cursor.source.read();
        cursor.items = chunk.items;
        cursor.next = 0;
        cursor.done = chunk.done;
      }
    };
    await Promise.all(Array.from({ length: Math.min(parallel, empty.length) }, lane));
  }
  const head = (c: SourceCursor<T>) => keyOf(c.items[c.next]!);
  const merged: T[] = [];
  let last: string | undefined;
  while (merged.length < want) {
    // A source with nothing in hand may hold the next item: each has its next one in hand first.
    while (cursors.some(starved)) await refill();
    let best: SourceCursor<T> | undefined;
    for (const cursor of cursors) {
      if (cursor.next >= cursor.items.length) continue;
      if (!best || head(cursor) < head(best) === forward) best = cursor;
    }
    if (!best) break;
    const key = head(best);
    const item = best.items[best.next++]!;
    if (key === last) continue;
    last = key;
    merged.push(item);
  }
  return merged;
}

/**
 * One page of the items of several partitions in sort-key order, with the cursors of
 * `listPage` (functions/shared/db/list.ts): the k-way merge of the partitions' own orders.
 * Each partition is read lazily, a small chunk at a time (twice its share of the page, then
 * twice as much each time it runs out), and only while its next item could still be in the
 * page: a page costs about `limit` items plus one small query per partition. Sort keys
 * are unique (record ids), so a cursor is exact: each partition resumes strictly past it, and
 * records written later with newer ids never shift an older page.
 */
export async function listMerged<T extends object = Item>(target: MergedListTarget, page: PageRequest): Promise<Page<T>> {
  const index = target.index === 'gsi1' ? { name: GSI1, partitionKey: KEY.gsi1pk, sortKey: KEY.gsi1sk } : target.index;
  const pkAttr = index?.partitionKey ?? KEY.pk;
  const skAttr = index?.sortKey ?? KEY.sk;
  const ascending = page.order === 'asc';
  const upper = ascending ? page.before : page.after;
  const lower = ascending ? page.after : page.before;
  const skCondition =
    lower !== undefined && upper !== undefined
      ? ' AND #sk BETWEEN :lo AND :hi'
      : lower !== undefined
        ? ' AND #sk > :lo'
        : upper !== undefined
          ? ' AND #sk < :hi'
          : '';
  const bounds: Record<string, string> = {};
  if (lower !== undefined) bounds[':lo'] = lower;
  if (upper !== undefined) bounds[':hi'] = upper;
  // With only `before`, walk away from the cursor and flip the result back into list order.
  const walkForward = page.after !== undefined || page.before === undefined ? ascending : !ascending;
  const want = page.limit + 1;
  // Twice a partition's share of the page: most pages need no second read of any partition.
  const firstChunk = Math.min(MAX_CHUNK, Math.ceil((2 * want) / target.partitions.length) + 1);
  const sources = target.partitions.map((partition): SortedSource<Item> => {
    let start: Record<string, unknown> | undefined;
    let chunk = firstChunk;
    return {
      async read() {
        const out = await ddb.query({
          TableName: tableName(target.table),
          IndexName: index?.name,
          KeyConditionExpression: `#pk = :pk${skCondition}`,
          FilterExpression: target.filter?.expression,
          ExpressionAttributeNames: { '#pk': pkAttr, ...(skCondition ? { '#sk': skAttr } : {}), ...target.filter?.names },
          ExpressionAttributeValues: { ':pk': partition, ...bounds, ...target.filter?.values },
          ScanIndexForward: walkForward,
          Limit: chunk,
          ExclusiveStartKey: start,
        });
        start = out.LastEvaluatedKey;
        chunk = Math.min(MAX_CHUNK, chunk * 2);
        // Cursors themselves are excluded (BETWEEN includes its ends).
        const items = ((out.Items ?? []) as Item[]).filter((item) => item[skAttr] !== upper && item[skAttr] !== lower);
        return { items, done: !start };
      },
    };
  });
  const items = await mergeSorted(sources, (item) => item[skAttr] as string, want, walkForward);
  const hasMore = items.length > page.limit;
  const pageItems = items.slice(0, page.limit);
  if (walkForward !== ascending) pageItems.reverse();
  return { items: pageItems as T[], hasMore };
}
