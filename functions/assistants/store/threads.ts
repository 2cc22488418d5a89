import { deleteItem, getItem, putNew, updateItem } from '../../shared/db/ops';
import { ID_PREFIX, newId } from '../../shared/ids';
import { asItem, deletePartition, fromJson, threadKey, threadPk, toJson } from './db';
import { messageItem, type NewMessage } from './messages';
import { nowSeconds, type Metadata, type Thread, type ToolResources } from '../types';

/**
 * Threads: one partition per thread (see db.ts). The thread item also holds the claim
 * of the active run (`active_run_id`), which runs.ts sets and releases.
 */

export interface ThreadFields {
  metadata: Metadata;
  tool_resources: ToolResources | null;
}

export interface ThreadItem {
  pk: string;
  sk: string;
  id: string;
  created_at: number;
  tool_resources_json: string | null;
  metadata_json: string;
  active_run_id?: string;
}

export function threadFromItem(item: ThreadItem): Thread {
  return {
    id: item.id,
    object: 'thread',
    created_at: item.created_at,
    tool_resources: fromJson<ToolResources | null>(item.tool_resources_json, null),
    metadata: fromJson<Metadata>(item.metadata_json, {}),
  };
}

export function threadItem(workspaceId: string, fields: ThreadFields, createdAt = nowSeconds()): ThreadItem {
  const id = newId(ID_PREFIX.thread);
  return {
    ...threadKey(workspaceId, id),
    id,
    created_at: createdAt,
    tool_resources_json: fields.tool_resources === null ? null : toJson(fields.tool_resources),
    metadata_json: toJson(fields.metadata),
  };
}

/**
 * Write the initial messages of a new thread. They go first: until the thread item
 * exists nothing can read them, so a failure part-way leaves nothing visible.
 */
export async function writeInitialMessages(workspaceId: string, threadId: string, messages: NewMessage[], createdAt: number): Promise<void> {
  for (const m of messages) {
    await putNew('threads', asItem(messageItem(workspaceId, threadId, m, createdAt)));
  }
}

export async function createThread(workspaceId: string, fields: ThreadFields, messages: NewMessage[]): Promise<Thread> {
  const item = threadItem(workspaceId, fields);
  await writeInitialMessages(workspaceId, item.id, messages, item.created_at);
  await putNew('threads', asItem(item));
  return threadFromItem(item);
}

export async function getThreadItem(workspaceId: string, threadId: string): Promise<ThreadItem | undefined> {
  return getItem<ThreadItem>('threads', threadKey(workspaceId, threadId), true);
}

export async function getThread(workspaceId: string, threadId: string): Promise<Thread | undefined> {
  const item = await getThreadItem(workspaceId, threadId);
  return item ? threadFromItem(item) : undefined;
}

export async function updateThread(workspaceId: string, threadId: string, patch: Partial<ThreadFields>): Promise<Thread | undefined> {
  const set: Record<string, unknown> = {
    metadata_json: patch.metadata && toJson(patch.metadata),
    tool_resources_json: patch.tool_resources === undefined ? undefined : patch.tool_resources === null ? null : toJson(patch.tool_resources),
  };
  if (Object.values(set).every((v) => v === undefined)) return getThread(workspaceId, threadId);
  const item = await updateItem<ThreadItem>('threads', threadKey(workspaceId, threadId), { set, condition: 'attribute_exists(pk)' });
  return item ? threadFromItem(item) : undefined;
}

/** Delete the thread, then its messages, runs and steps. False when there was no thread. */
export async function deleteThread(workspaceId: string, threadId: string): Promise<boolean> {
  if (!(await deleteItem('threads', threadKey(workspaceId, threadId), 'attribute_exists(pk)'))) return false;
  await deletePartition('threads', threadPk(workspaceId, threadId));
  return true;
}
