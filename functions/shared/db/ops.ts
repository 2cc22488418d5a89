import { randomUUID } from 'node:crypto';
import type { TableName } from '../tables';
import { ddb, tableName } from './client';
import type { WriteRequest as DocumentWriteRequest, TransactWriteItem } from './document';

export type Item = Record<string, unknown>;
export type Key = { pk: string; sk: string };

export function isConditionFailed(err: unknown): boolean {
  const name = (err as { name?: string } | undefined)?.name;
  if (name === 'ConditionalCheckFailedException') return true;
  if (name === 'TransactionCanceledException') {
    const reasons = (err as { CancellationReasons?: Array<{ Code?: string }> }).CancellationReasons ?? [];
    return reasons.some((r) => r.Code === 'ConditionalCheckFailed');
  }
  return false;
}

export async function getItem<T extends object = Record<string, unknown>>(table: TableName, key: Key, consistent = false): Promise<T | undefined> {
  const out = await ddb.get({ TableName: tableName(table), Key: key, ConsistentRead: consistent });
  return out.Item as T | undefined;
}

/** Put that fails (returns false) when an item with the same key exists. */
export async function putNew(table: TableName, item: Key & Record<string, unknown>): Promise<boolean> {
  try {
    await ddb.put({ TableName: tableName(table), Item: item, ConditionExpression: 'attribute_not_exists(pk)' });
    return true;
  } catch (err) {
    if (isConditionFailed(err)) return false;
    throw err;
  }
}

export async function putItem(table: TableName, item: Key & Record<string, unknown>): Promise<void> {
  await ddb.put({ TableName: tableName(table), Item: item });
}

export interface UpdateSpec {
  set?: Record<string, unknown>;
  remove?: string[];
  add?: Record<string, number>;
  /** Condition over attribute names written as `#name` and values as `:name`. */
  condition?: string;
  conditionValues?: Record<string, unknown>;
}

/** Build an UpdateExpression with placeholders for every attribute and value. */
export function buildUpdate(spec: UpdateSpec) {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets: string[] = [];
  const adds: string[] = [];
  let i = 0;
  for (const [attr, value] of Object.entries(spec.set ?? {})) {
    if (value === undefined) continue;
    names[`#u${i}`] = attr;
    values[`:u${i}`] = value;
    sets.push(`#u${i} = :u${i}`);
    i++;
  }
  for (const [attr, value] of Object.entries(spec.add ?? {})) {
    names[`#u${i}`] = attr;
    values[`:u${i}`] = value;
    adds.push(`#u${i} :u${i}`);
    i++;
  }
  const removes = (spec.remove ?? []).map((attr) => {
    names[`#u${i}`] = attr;
    return `#u${i++}`;
  });
  let condition: string | undefined;
  if (spec.condition) {
    // Condition placeholders `#attr` map to the attribute of the same name.
    condition = spec.condition;
    for (const match of spec.condition.matchAll(/#([A-Za-z_][A-Za-z0-9_]*)/g)) names[`#${match[1]}`] = match[1]!;
    Object.assign(values, spec.conditionValues ?? {});
  }
  const parts = [
    sets.length ? `SET ${sets.join(', ')}` : '',
    adds.length ? `ADD ${adds.join(', ')}` : '',
    removes.length ? `REMOVE ${removes.join(', ')}` : '',
  ].filter(Boolean);
  return {
    UpdateExpression: parts.join(' '),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: Object.keys(values).length ? values : undefined,
    ConditionExpression: condition,
  };
}

/**
 * Conditional update; returns the new item, or undefined when the condition failed
 * (the optimistic-concurrency signal every state machine transition relies on).
 */
export async function updateItem<T extends object = Record<string, unknown>>(table: TableName, key: Key, spec: UpdateSpec): Promise<T | undefined> {
  try {
    const out = await ddb.update({ TableName: tableName(table), Key: key, ...buildUpdate(spec), ReturnValues: 'ALL_NEW' });
    return out.Attributes as T;
  } catch (err) {
    if (isConditionFailed(err)) return undefined;
    throw err;
  }
}

/**
 * An increment (`add`, with any `set`) applied at most once, whatever the client's retries:
 * the update names itself in `last_write` and applies only if it is not already the item's
 * last, so a retry of an update DynamoDB applied but whose answer was lost is refused.
 * Returns the new item, or undefined when refused that way: the increment is in the item
 * all the same. (A retry that arrives after another update to the same item applies again;
 * no extra write unit is spent either way.)
 */
export function addOnce<T extends object = Record<string, unknown>>(
  table: TableName,
  key: Key,
  spec: Pick<UpdateSpec, 'set' | 'add'>,
  writeId: string = randomUUID(),
): Promise<T | undefined> {
  return updateItem<T>(table, key, {
    set: { ...spec.set, last_write: writeId },
    add: spec.add,
    condition: 'attribute_not_exists(#last_write) OR #last_write <> :write_id',
    conditionValues: { ':write_id': writeId },
  });
}

/**
 * Where one writer's increments stand in an item: `attr` holds the `seq` of the writer's
 * last increment applied, and a writer sends its increments to one item one at a time with
 * `seq`s that sort upwards (as strings). Whether an increment was applied is then in the
 * item itself, whatever else was added since: a journal replayed after a crash can re-send
 * it safely.
 */
export interface WriteMarker {
  /** An attribute name of letters, digits and `_`, owned by one writer. */
  attr: string;
  seq: string;
}

/**
 * An increment applied only if the item has not seen this writer's `marker.seq` (or a later
 * one): exactly once, across retries and replays. Returns the new item, or undefined when
 * refused that way (the increment is already in the item).
 */
export function addInOrder<T extends object = Record<string, unknown>>(
  table: TableName,
  key: Key,
  spec: Pick<UpdateSpec, 'set' | 'add'>,
  marker: WriteMarker,
): Promise<T | undefined> {
  return updateItem<T>(table, key, {
    set: { ...spec.set, [marker.attr]: marker.seq },
    add: spec.add,
    condition: `attribute_not_exists(#${marker.attr}) OR #${marker.attr} < :seq`,
    conditionValues: { ':seq': marker.seq },
  });
}

export async function deleteItem(table: TableName, key: Key, condition?: string): Promise<boolean> {
  try {
    await ddb.delete({ TableName: tableName(table), Key: key, ConditionExpression: condition });
    return true;
  } catch (err) {
    if (isConditionFailed(err)) return false;
    throw err;
  }
}

/** All-or-nothing write; false when any condition failed. */
export async function transactWrite(items: TransactWriteItem[]): Promise<boolean> {
  try {
    await ddb.transactWrite({ TransactItems: items });
    return true;
  } catch (err) {
    if (isConditionFailed(err)) return false;
    throw err;
  }
}

export type WriteRequest = { PutRequest: { Item: Key & Record<string, unknown> } } | { DeleteRequest: { Key: Key } };

/** DynamoDB's limit on the requests of one BatchWriteItem call. */
export const BATCH_WRITE_MAX = 25;
const BATCH_WRITE_ATTEMPTS = 5;

/** Requests DynamoDB left unprocessed (throttled) through every attempt of `batchWrite`. */
export class UnprocessedItemsError extends Error {
  override name = 'UnprocessedItemsError';
}

/**
 * Puts and deletes in BatchWriteItem calls of up to 25, re-sending what DynamoDB leaves
 * unprocessed (throttling) with a growing pause. Not atomic: each request lands or not on
 * its own. Throws when requests are still unprocessed after the last attempt.
 */
export async function batchWrite(table: TableName, requests: readonly WriteRequest[]): Promise<void> {
  const name = tableName(table);
  for (let i = 0; i < requests.length; i += BATCH_WRITE_MAX) {
    let pending: DocumentWriteRequest[] = requests.slice(i, i + BATCH_WRITE_MAX);
    for (let attempt = 0; pending.length && attempt < BATCH_WRITE_ATTEMPTS; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 20 * attempt + Math.floor(Math.random() * 20)));
      const out = await ddb.batchWrite({ RequestItems: { [name]: pending } });
      pending = out.UnprocessedItems?.[name] ?? [];
    }
    if (pending.length)
      throw new UnprocessedItemsError(`BatchWriteItem on ${table}: ${pending.length} request(s) still unprocessed after ${BATCH_WRITE_ATTEMPTS} attempts`);
  }
}

/** Every item under a partition key whose sort key starts with a prefix (small sets only). */
export async function queryAll<T extends object = Record<string, unknown>>(table: TableName, pk: string, skPrefix: string): Promise<T[]> {
  const items: T[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await ddb.query({
      TableName: tableName(table),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': pk, ':prefix': skPrefix },
      ExclusiveStartKey: start,
    });
    items.push(...((out.Items ?? []) as T[]));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}
