/**
 * Batches in the jobs table, keyed by workspace so every read is tenant-scoped:
 *
 *   batch  pk WS#<workspace>                  sk BATCH#<batch-id>   (ids are time-ordered)
 *   line   pk WS#<workspace>#BATCH#<batch-id> sk LINE#<file line, 10 digits>
 *
 * A line's answer and the batch's count move together in one transaction: the line item is
 * put only if absent (a line is answered once, whoever answers it: a redelivered chunk, a
 * second worker), and the count only while the batch is `in_progress` (once it is
 * finalizing, cancelling or expired, no answer joins the output any more).
 */
import { newFileId } from '../files/store';
import { config } from '../shared/config';
import { ddb, tableName } from '../shared/db/client';
import { listPage, type Page } from '../shared/db/list';
import { batchWrite, deleteItem, getItem, putNew, updateItem } from '../shared/db/ops';
import { timeOrderedId } from '../shared/ids';
import type { BatchRecord, BatchStatus, LineResult } from './types';

/** What a new batch is given; the rest starts as every batch does. */
type NewBatch = Pick<BatchRecord, 'id' | 'workspace_id' | 'endpoint' | 'input_file_id' | 'metadata' | 'auth' | 'headers' | 'total'> &
  Partial<Pick<BatchRecord, 'mode' | 'native' | 'max_requests'>>;

/** A batch as created: `validating`, its window from now, its output files' ids chosen. */
export function newBatchRecord(batch: NewBatch): BatchRecord {
  const createdAt = Math.floor(Date.now() / 1000);
  return {
    ...batch,
    completion_window: '24h',
    status: 'validating',
    output_file_id: null,
    error_file_id: null,
    created_at: createdAt,
    in_progress_at: null,
    expires_at: createdAt + Math.ceil(config().batchWindowMs / 1000),
    finalizing_at: null,
    completed_at: null,
    failed_at: null,
    expired_at: null,
    cancelling_at: null,
    cancelled_at: null,
    completed: 0,
    failed: 0,
    batch_errors: null,
    ending: null,
    planned_output_file_id: newFileId(),
    planned_error_file_id: newFileId(),
  };
}

const BATCH_PREFIX = 'BATCH#';
const LINE_PREFIX = 'LINE#';

const batchKey = (workspaceId: string, batchId: string) => ({ pk: `WS#${workspaceId}`, sk: `${BATCH_PREFIX}${batchId}` });
const linesPartition = (workspaceId: string, batchId: string) => `WS#${workspaceId}#BATCH#${batchId}`;
const lineSortKey = (line: number) => `${LINE_PREFIX}${String(line).padStart(10, '0')}`;

type Stored<T> = T & { pk: string; sk: string };

function strip<T extends object>(item: Stored<T>): T {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest as unknown as T;
}

export const newBatchId = () => `batch_${timeOrderedId()}`;

export async function createBatch(record: BatchRecord): Promise<boolean> {
  return putNew('jobs', { ...batchKey(record.workspace_id, record.id), ...record } as Stored<BatchRecord> & Record<string, unknown>);
}

export async function getBatch(workspaceId: string, batchId: string, consistent = true): Promise<BatchRecord | undefined> {
  const item = await getItem<Stored<BatchRecord>>('jobs', batchKey(workspaceId, batchId), consistent);
  return item ? strip(item) : undefined;
}

/**
 * One kind of batch of the workspace, newest first: ids start with `idPrefix` (`batch_`: the
 * Batches API's, `msgbatch_`: the Message Batches API's); the cursors are ids of that kind.
 */
export async function listBatches(
  workspaceId: string,
  page: { limit: number; after?: string; before?: string },
  idPrefix = 'batch_',
): Promise<Page<BatchRecord>> {
  const suffix = (id: string | undefined) => (id?.startsWith(idPrefix) ? id.slice(idPrefix.length) : id);
  const result = await listPage<Stored<BatchRecord>>(
    { table: 'jobs', partition: `WS#${workspaceId}`, prefix: `${BATCH_PREFIX}${idPrefix}` },
    { limit: page.limit, order: 'desc', after: suffix(page.after), before: suffix(page.before) },
  );
  return { items: result.items.map(strip), hasMore: result.hasMore };
}

/** Moves the batch from one of `from` with `set`; the batch after it, or undefined when it was in another status. */
export async function transitionBatch(
  batch: Pick<BatchRecord, 'workspace_id' | 'id'>,
  from: readonly BatchStatus[],
  set: Partial<BatchRecord>,
): Promise<BatchRecord | undefined> {
  const values = Object.fromEntries(from.map((s, i) => [`:from${i}`, s]));
  const item = await updateItem<Stored<BatchRecord>>('jobs', batchKey(batch.workspace_id, batch.id), {
    set: set as Record<string, unknown>,
    condition: `attribute_exists(pk) AND #status IN (${Object.keys(values).join(', ')})`,
    conditionValues: values,
  });
  return item ? strip(item) : undefined;
}

export type RecordOutcome = 'recorded' | 'already-answered' | 'batch-closed';

const CONFLICT_RETRIES = 20;

/**
 * Records a line's answer and counts it, atomically (see the module comment). A transaction
 * that collides with another one on the batch item (TransactionConflict) is tried again.
 */
export async function recordLine(
  batch: Pick<BatchRecord, 'workspace_id' | 'id'>,
  result: LineResult,
  /** The statuses a line may still join the batch in (native mode also records while `cancelling`: its lines arrive after the provider stopped). */
  open: readonly BatchStatus[] = ['in_progress'],
): Promise<RecordOutcome> {
  const table = tableName('jobs');
  const openValues = Object.fromEntries(open.map((s, i) => [`:open${i}`, s]));
  for (let attempt = 0; ; attempt++) {
    try {
      await ddb.transactWrite({
        TransactItems: [
          {
            Put: {
              TableName: table,
              Item: { pk: linesPartition(batch.workspace_id, batch.id), sk: lineSortKey(result.line), ...result },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Update: {
              TableName: table,
              Key: batchKey(batch.workspace_id, batch.id),
              UpdateExpression: 'ADD #count :one',
              ConditionExpression: `#status IN (${Object.keys(openValues).join(', ')})`,
              ExpressionAttributeNames: { '#count': result.ok ? 'completed' : 'failed', '#status': 'status' },
              ExpressionAttributeValues: { ':one': 1, ...openValues },
            },
          },
        ],
      });
      return 'recorded';
    } catch (err) {
      const reasons = (err as { CancellationReasons?: Array<{ Code?: string }> }).CancellationReasons;
      if ((err as { name?: string }).name !== 'TransactionCanceledException' || !reasons) throw err;
      if (reasons[0]?.Code === 'ConditionalCheckFailed') return 'already-answered';
      if (reasons[1]?.Code === 'ConditionalCheckFailed') return 'batch-closed';
      if (attempt >= CONFLICT_RETRIES) throw err;
      await new Promise((r) => setTimeout(r, 10 + Math.random() * 40 * (attempt + 1)));
    }
  }
}

/** The file lines in [first, last] that already have an answer. */
export async function answeredLines(batch: Pick<BatchRecord, 'workspace_id' | 'id'>, first: number, last: number): Promise<Set<number>> {
  const answered = new Set<number>();
  let start: Record<string, unknown> | undefined;
  do {
    const out = await ddb.query({
      TableName: tableName('jobs'),
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :lo AND :hi',
      ExpressionAttributeValues: { ':pk': linesPartition(batch.workspace_id, batch.id), ':lo': lineSortKey(first), ':hi': lineSortKey(last) },
      ProjectionExpression: '#line',
      ExpressionAttributeNames: { '#line': 'line' },
      ExclusiveStartKey: start,
    });
    for (const item of out.Items ?? []) answered.add(item.line as number);
    start = out.LastEvaluatedKey;
  } while (start);
  return answered;
}

/** Every answered line of the batch in file order, a page at a time (never all in memory). */
export async function* answeredResults(batch: Pick<BatchRecord, 'workspace_id' | 'id'>): AsyncGenerator<LineResult> {
  let start: Record<string, unknown> | undefined;
  do {
    const out = await ddb.query({
      TableName: tableName('jobs'),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': linesPartition(batch.workspace_id, batch.id), ':prefix': LINE_PREFIX },
      ConsistentRead: true,
      ExclusiveStartKey: start,
    });
    for (const item of out.Items ?? []) yield strip(item as unknown as Stored<LineResult>);
    start = out.LastEvaluatedKey;
  } while (start);
}

/** Deletes the batch and its answered lines (a page at a time); true when the batch was there. */
export async function deleteBatch(batch: Pick<BatchRecord, 'workspace_id' | 'id'>): Promise<boolean> {
  const deleted = await deleteItem('jobs', batchKey(batch.workspace_id, batch.id), 'attribute_exists(pk)');
  const pk = linesPartition(batch.workspace_id, batch.id);
  let start: Record<string, unknown> | undefined;
  do {
    const out = await ddb.query({
      TableName: tableName('jobs'),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': pk, ':prefix': LINE_PREFIX },
      ProjectionExpression: 'pk, sk',
      ExclusiveStartKey: start,
    });
    await batchWrite(
      'jobs',
      (out.Items ?? []).map((item) => ({ DeleteRequest: { Key: { pk, sk: item.sk as string } } })),
    );
    start = out.LastEvaluatedKey;
  } while (start);
  return deleted;
}
