import { deleteItem, getItem, updateItem } from '../../shared/db/ops';
import { listPage, type Page, type PageRequest } from '../../shared/db/list';
import { badRequest, conflict } from '../../shared/errors';
import { ID_PREFIX, newId } from '../../shared/ids';
import { asItem, fromJson, messageKey, MSG_PREFIX, threadKey, threadPk, toJson, transact, txCheck, txPut } from './db';
import type { MessageInput } from '../routes/schemas';
import { nowSeconds, type Attachment, type Message, type MessageContent, type MessageStatus, type Metadata } from '../types';

/**
 * Thread messages, in the thread's partition under `MSG#<id>`. Content,
 * attachments and metadata are stored as JSON text so they round-trip exactly.
 */

/** Largest stored content of one message (a DynamoDB item holds at most 400 KB). */
export const MAX_CONTENT_BYTES = 256 * 1024;

export interface NewMessage {
  role: 'user' | 'assistant';
  content: MessageContent[];
  attachments: Attachment[] | null;
  metadata: Metadata;
  assistant_id?: string | null;
  run_id?: string | null;
  /** Default `completed` (a message created through the API is complete at once). */
  status?: MessageStatus;
  /** A fixed id (the run engine's deterministic ids); default a new time-ordered id. */
  id?: string;
}

interface MessageItem {
  pk: string;
  sk: string;
  id: string;
  created_at: number;
  thread_id: string;
  status: MessageStatus;
  incomplete_details: { reason: string } | null;
  completed_at: number | null;
  incomplete_at: number | null;
  role: 'user' | 'assistant';
  content_json: string;
  assistant_id: string | null;
  /** Absent (not null) on manual messages, so the `run_id` list filter stays simple. */
  run_id?: string;
  attachments_json: string | null;
  metadata_json: string;
}

/** Caller input -> stored content parts. */
export function toContent(content: MessageInput['content'], field: string): MessageContent[] {
  const parts: MessageContent[] =
    typeof content === 'string'
      ? [{ type: 'text', text: { value: content, annotations: [] } }]
      : content.map((part): MessageContent => {
          if (part.type === 'text') return { type: 'text', text: { value: part.text, annotations: [] } };
          if (part.type === 'image_url') return { type: 'image_url', image_url: { url: part.image_url.url, detail: part.image_url.detail ?? 'auto' } };
          return { type: 'image_file', image_file: { file_id: part.image_file.file_id, detail: part.image_file.detail ?? 'auto' } };
        });
  const bytes = Buffer.byteLength(toJson(parts), 'utf8');
  if (bytes > MAX_CONTENT_BYTES) {
    throw badRequest(`Invalid \`${field}\`: ${bytes} bytes exceeds the limit of ${MAX_CONTENT_BYTES} bytes per message.`, field, 'too_large');
  }
  return parts;
}

/** A validated caller message -> what the store writes. `field` names it in errors. */
export function newMessageFrom(input: MessageInput, field: string): NewMessage {
  return {
    role: input.role,
    content: toContent(input.content, `${field ? `${field}.` : ''}content`),
    attachments: (input.attachments ?? []).map((a) => ({ file_id: a.file_id, tools: a.tools ?? [] })),
    metadata: input.metadata ?? {},
  };
}

export function messageFromItem(item: MessageItem): Message {
  return {
    id: item.id,
    object: 'thread.message',
    created_at: item.created_at,
    thread_id: item.thread_id,
    status: item.status,
    incomplete_details: item.incomplete_details ?? null,
    completed_at: item.completed_at ?? null,
    incomplete_at: item.incomplete_at ?? null,
    role: item.role,
    content: fromJson<MessageContent[]>(item.content_json, []),
    assistant_id: item.assistant_id ?? null,
    run_id: item.run_id ?? null,
    attachments: fromJson<Attachment[] | null>(item.attachments_json, null),
    metadata: fromJson<Metadata>(item.metadata_json, {}),
  };
}

/** The item for a new message (written by the caller, alone or inside a transaction). */
export function messageItem(workspaceId: string, threadId: string, m: NewMessage, createdAt = nowSeconds()): MessageItem {
  const id = m.id ?? newId(ID_PREFIX.message);
  const status = m.status ?? 'completed';
  return {
    ...messageKey(workspaceId, threadId, id),
    id,
    created_at: createdAt,
    thread_id: threadId,
    status,
    incomplete_details: null,
    completed_at: status === 'completed' ? createdAt : null,
    incomplete_at: null,
    role: m.role,
    content_json: toJson(m.content),
    assistant_id: m.assistant_id ?? null,
    ...(m.run_id ? { run_id: m.run_id } : {}),
    attachments_json: m.attachments === null ? null : toJson(m.attachments),
    metadata_json: toJson(m.metadata),
  };
}

export type AddMessageResult = { message: Message } | { missingThread: true } | { activeRunId: string };

/**
 * Add a message to an existing thread, atomically with a check of the thread. With
 * `whenIdle` (messages sent through the API) a thread with an active run refuses it, as
 * OpenAI does; a run's own messages are written with `whenIdle: false`.
 */
export async function addMessage(workspaceId: string, threadId: string, m: NewMessage, opts: { whenIdle: boolean }): Promise<AddMessageResult> {
  const item = messageItem(workspaceId, threadId, m);
  const condition = opts.whenIdle ? 'attribute_exists(pk) AND attribute_not_exists(#active_run_id)' : 'attribute_exists(pk)';
  const outcome = await transact([txCheck('threads', threadKey(workspaceId, threadId), condition), txPut('threads', asItem(item))]);
  if (outcome === 'ok') return { message: messageFromItem(item) };
  const thread = await getItem<{ active_run_id?: string }>('threads', threadKey(workspaceId, threadId), true);
  if (!thread) return { missingThread: true };
  if (thread.active_run_id) return { activeRunId: thread.active_run_id };
  throw conflict(`Thread ${threadId} is being changed by another request; retry.`, 'concurrent_update');
}

export async function getMessage(workspaceId: string, threadId: string, id: string): Promise<Message | undefined> {
  const item = await getItem<MessageItem>('threads', messageKey(workspaceId, threadId, id), true);
  return item ? messageFromItem(item) : undefined;
}

export async function listMessages(workspaceId: string, threadId: string, page: PageRequest, runId?: string): Promise<Page<Message>> {
  const result = await listPage<MessageItem>(
    {
      table: 'threads',
      partition: threadPk(workspaceId, threadId),
      prefix: MSG_PREFIX,
      ...(runId !== undefined ? { filter: { expression: '#run_id = :run_id', names: { '#run_id': 'run_id' }, values: { ':run_id': runId } } } : {}),
    },
    page,
  );
  return { items: result.items.map(messageFromItem), hasMore: result.hasMore };
}

export interface MessagePatch {
  metadata?: Metadata;
  status?: MessageStatus;
  content?: MessageContent[];
  completed_at?: number | null;
  incomplete_at?: number | null;
  incomplete_details?: { reason: string } | null;
}

/**
 * Change a message (metadata via the API; status and content by a run). Undefined when
 * absent, or with `whileInProgress` when the message is no longer `in_progress` (a run
 * finishes its message once: a late or duplicate engine task changes nothing).
 */
export async function updateMessage(
  workspaceId: string,
  threadId: string,
  id: string,
  patch: MessagePatch,
  opts: { whileInProgress?: boolean } = {},
): Promise<Message | undefined> {
  const set: Record<string, unknown> = {
    status: patch.status,
    completed_at: patch.completed_at,
    incomplete_at: patch.incomplete_at,
    incomplete_details: patch.incomplete_details,
    metadata_json: patch.metadata && toJson(patch.metadata),
    content_json: patch.content && toJson(patch.content),
  };
  if (Object.values(set).every((v) => v === undefined)) return getMessage(workspaceId, threadId, id);
  const item = await updateItem<MessageItem>('threads', messageKey(workspaceId, threadId, id), {
    set,
    condition: opts.whileInProgress ? 'attribute_exists(pk) AND #status = :open' : 'attribute_exists(pk)',
    conditionValues: opts.whileInProgress ? { ':open': 'in_progress' } : undefined,
  });
  return item ? messageFromItem(item) : undefined;
}

/**
 * Write a run's message under its fixed id unless it exists (a retried engine task), with
 * a check that the thread still exists. The stored message either way; undefined when
 * the thread is gone.
 */
export async function addMessageOnce(workspaceId: string, threadId: string, m: NewMessage & { id: string }): Promise<Message | undefined> {
  const item = messageItem(workspaceId, threadId, m);
  const outcome = await transact([txCheck('threads', threadKey(workspaceId, threadId), 'attribute_exists(pk)'), txPut('threads', asItem(item))]);
  if (outcome === 'ok') return messageFromItem(item);
  return getMessage(workspaceId, threadId, m.id);
}

export function deleteMessage(workspaceId: string, threadId: string, id: string): Promise<boolean> {
  return deleteItem('threads', messageKey(workspaceId, threadId, id), 'attribute_exists(pk)');
}
