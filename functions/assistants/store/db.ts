import { ddb, tableName } from '../../shared/db/client';
import type { TransactWriteItem as TransactItem } from '../../shared/db/document';
import { batchWrite, buildUpdate, type Key, type UpdateSpec } from '../../shared/db/ops';
import type { TableName } from '../../shared/tables';

/**
 * Key layout.
 *
 * threads table, one partition per thread `WS#<ws>#THREAD#<thread_id>`:
 *   `THREAD`                     the thread (holds `active_run_id` while a run is active)
 *   `MSG#<msg_id>`               messages     (ids are time-ordered: sort key = creation order)
 *   `RUN#<run_id>`               runs
 *   `STEP#<run_id>#<step_id>`    run steps
 * control table: `WS#<ws>` / `ASST#<asst_id>` assistants.
 */
export const threadPk = (workspaceId: string, threadId: string) => `WS#${workspaceId}#THREAD#${threadId}`;
export const THREAD_SK = 'THREAD';
export const MSG_PREFIX = 'MSG#';
export const RUN_PREFIX = 'RUN#';
export const stepPrefix = (runId: string) => `STEP#${runId}#`;

export const threadKey = (workspaceId: string, threadId: string): Key => ({ pk: threadPk(workspaceId, threadId), sk: THREAD_SK });
export const messageKey = (workspaceId: string, threadId: string, id: string): Key => ({ pk: threadPk(workspaceId, threadId), sk: MSG_PREFIX + id });
export const runKey = (workspaceId: string, threadId: string, id: string): Key => ({ pk: threadPk(workspaceId, threadId), sk: RUN_PREFIX + id });
export const stepKey = (workspaceId: string, threadId: string, runId: string, id: string): Key => ({
  pk: threadPk(workspaceId, threadId),
  sk: stepPrefix(runId) + id,
});
export const ASSISTANT_PREFIX = 'ASST#';
export const assistantKey = (workspaceId: string, id: string): Key => ({ pk: `WS#${workspaceId}`, sk: ASSISTANT_PREFIX + id });

/** Longest id a lookup accepts; a longer one cannot exist (and would exceed key limits). */
export const MAX_ID_LENGTH = 128;

/** Free-form JSON (tool schemas, content parts, metadata) is stored as text: it round-trips exactly. */
export const toJson = (value: unknown) => JSON.stringify(value);
export const fromJson = <T>(text: unknown, fallback: T): T => (typeof text === 'string' ? (JSON.parse(text) as T) : fallback);

/** A typed item as the document client takes it (every item here has `pk`/`sk`). */
export const asItem = (item: object) => item as Key & Record<string, unknown>;

export const txPut = (table: TableName, item: Record<string, unknown>, condition = 'attribute_not_exists(pk)'): TransactItem => ({
  Put: { TableName: tableName(table), Item: item, ConditionExpression: condition },
});

export const txUpdate = (table: TableName, key: Key, spec: UpdateSpec): TransactItem => ({
  Update: { TableName: tableName(table), Key: key, ...buildUpdate(spec) },
});

export const txCheck = (table: TableName, key: Key, condition: string, values?: Record<string, unknown>): TransactItem => {
  const names: Record<string, string> = {};
  for (const m of condition.matchAll(/#([A-Za-z_][A-Za-z0-9_]*)/g)) names[`#${m[1]}`] = m[1]!;
  return {
    ConditionCheck: {
      TableName: tableName(table),
      Key: key,
      ConditionExpression: condition,
      ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
      ...(values ? { ExpressionAttributeValues: values } : {}),
    },
  };
};

/** `ok`; `condition_failed` (a condition said no); `conflict` (a concurrent transaction, retry). */
export type TransactOutcome = 'ok' | 'condition_failed' | 'conflict';

async function transactOnce(items: TransactItem[]): Promise<TransactOutcome> {
  try {
    await ddb.transactWrite({ TransactItems: items });
    return 'ok';
  } catch (err) {
    const e = err as { name?: string; CancellationReasons?: Array<{ Code?: string }> };
    if (e.name === 'TransactionCanceledException') {
      const codes = (e.CancellationReasons ?? []).map((r) => r.Code);
      if (codes.includes('ConditionalCheckFailed')) return 'condition_failed';
      if (codes.includes('TransactionConflict')) return 'conflict';
    }
    if (e.name === 'TransactionConflictException') return 'conflict';
    throw err;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * All-or-nothing write. Transaction conflicts with concurrent writers of the same items
 * are retried with jitter; only a failed condition (or conflicts that persist) is reported.
 */
export async function transact(items: TransactItem[], attempts = 5): Promise<TransactOutcome> {
  let outcome: TransactOutcome = 'conflict';
  for (let i = 0; i < attempts && outcome === 'conflict'; i++) {
    if (i > 0) await sleep(10 * i + Math.floor(Math.random() * 20));
    outcome = await transactOnce(items);
  }
  return outcome;
}

/** Delete every item of a partition (a deleted thread's messages, runs and steps). */
export async function deletePartition(table: TableName, pk: string): Promise<void> {
  const items: Key[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await ddb.query({
      TableName: tableName(table),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ProjectionExpression: 'pk, sk',
      ExclusiveStartKey: start,
    });
    items.push(...((out.Items ?? []) as Key[]));
    start = out.LastEvaluatedKey;
  } while (start);
  await batchWrite(
    table,
    items.map((it) => ({ DeleteRequest: { Key: { pk: it.pk, sk: it.sk } } })),
  );
}
