import { GSI1, KEY, type IndexKeys, type TableName } from '../tables';
import { ddb, tableName } from './client';

export interface PageRequest {
  limit: number;
  order: 'asc' | 'desc';
  /** Cursor: the sort-key suffix (usually an object id) of the last item already seen. */
  after?: string;
  /** Cursor: the sort-key suffix of the first item already seen. */
  before?: string;
}

export interface Page<T> {
  items: T[];
  hasMore: boolean;
}

export interface ListTarget {
  table: TableName;
  /** Partition key value (base table `pk`, `gsi1pk` with `index: 'gsi1'`, or the index's own partition key). */
  partition: string;
  /** Every listed item's sort key is `prefix + id`. */
  prefix: string;
  index?: 'gsi1' | IndexKeys;
  filter?: { expression: string; names?: Record<string, string>; values?: Record<string, unknown> };
}

const HIGH = '\uffff';

/**
 * One page of items in sort-key order, OpenAI list semantics: `after` continues past
 * a cursor in the list's order, `before` pages back towards newer/older items. Because
 * ids are time-ordered, sort-key order is creation order.
 */
export async function listPage<T extends object = Record<string, unknown>>(target: ListTarget, page: PageRequest): Promise<Page<T>> {
  const index = target.index === 'gsi1' ? { name: GSI1, partitionKey: KEY.gsi1pk, sortKey: KEY.gsi1sk } : target.index;
  const pkAttr = index?.partitionKey ?? KEY.pk;
  const skAttr = index?.sortKey ?? KEY.sk;
  const { prefix } = target;
  const afterKey = page.after !== undefined ? prefix + page.after : undefined;
  const beforeKey = page.before !== undefined ? prefix + page.before : undefined;
  const ascending = page.order === 'asc';
  // Items strictly between the cursors, within the prefix.
  const upper = ascending ? beforeKey : afterKey;
  const lower = ascending ? afterKey : beforeKey;
  const lo = lower ?? (prefix || undefined);
  const hi = upper ?? (prefix ? prefix + HIGH : undefined);
  const skCondition =
    lo !== undefined && hi !== undefined ? ' AND #sk BETWEEN :lo AND :hi' : lo !== undefined ? ' AND #sk > :lo' : hi !== undefined ? ' AND #sk < :hi' : '';
  const bounds: Record<string, string> = {};
  if (lo !== undefined) bounds[':lo'] = lo;
  if (hi !== undefined) bounds[':hi'] = hi;
  // With only `before`, walk away from the cursor and flip the result back into list order.
  const walkForward = page.after !== undefined || page.before === undefined ? ascending : !ascending;

  const items: T[] = [];
  let start: Record<string, unknown> | undefined;
  const want = page.limit + 1;
  do {
    const out = await ddb.query({
      TableName: tableName(target.table),
      IndexName: index?.name,
      KeyConditionExpression: `#pk = :pk${skCondition}`,
      FilterExpression: target.filter?.expression,
      ExpressionAttributeNames: { '#pk': pkAttr, ...(skCondition ? { '#sk': skAttr } : {}), ...target.filter?.names },
      ExpressionAttributeValues: { ':pk': target.partition, ...bounds, ...target.filter?.values },
      ScanIndexForward: walkForward,
      Limit: target.filter ? undefined : want + 1,
      ExclusiveStartKey: start,
    });
    for (const item of (out.Items ?? []) as T[]) {
      const sk = (item as Record<string, unknown>)[skAttr];
      if (sk === upper || sk === lower) continue; // cursors themselves are excluded
      items.push(item);
    }
    start = out.LastEvaluatedKey;
  } while (start && items.length < want);

  const hasMore = items.length > page.limit;
  const pageItems = items.slice(0, page.limit);
  if (walkForward !== ascending) pageItems.reverse();
  return { items: pageItems, hasMore };
}
