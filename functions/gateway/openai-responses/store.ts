import { config } from '../../shared/config';
import { batchWrite, deleteItem, getItem } from '../../shared/db/ops';
import type { ConversationItem } from '../../formats/responses/request';
import type { ResponsesItem } from '../../formats/responses/schema';
import type { ResponseObject } from '../../formats/responses/types';
import { log } from '../../shared/telemetry/logger';
import type { RequestContext } from '../../shared/telemetry/context';

/**
 * Responses created on translated providers with `store` (the default, as on OpenAI),
 * kept in the cache table (it has TTL) so `previous_response_id` continues a conversation
 * on any provider. One item per response: the response, its input items and the whole
 * conversation so far (what the next turn replays), scoped by workspace.
 */
export interface StoredResponse {
  response: ResponseObject;
  input: ResponsesItem[];
  /** Every item of the conversation up to and including this response's output. */
  conversation: ConversationItem[];
}

/** DynamoDB's item limit is 400 KB; a larger conversation is not stored (and says so in the log). */
const MAX_STORED_BYTES = 380 * 1024;

const keyOf = (workspaceId: string, id: string) => ({ pk: `RESP#${workspaceId}#${id}`, sk: 'RESPONSE' });
/** Output items by id too: clients that store (the AI SDK) send later turns as `item_reference`s. */
const itemKeyOf = (workspaceId: string, id: string) => ({ pk: `RESPITEM#${workspaceId}#${id}`, sk: 'ITEM' });

export async function storeResponse(workspaceId: string, stored: StoredResponse, context: RequestContext): Promise<boolean> {
  const body = JSON.stringify(stored);
  if (Buffer.byteLength(body) > MAX_STORED_BYTES) {
    log.warn('response too large to store', { response_id: stored.response.id, bytes: Buffer.byteLength(body) }, context);
    return false;
  }
  const ttl = Math.floor(Date.now() / 1000) + config().responsesTtlDays * 86_400;
  // One BatchWriteItem for the response and its output items (a text answer: two items):
  // a call costs the container about as much CPU as the whole response's translation.
  await batchWrite('cache', [
    { PutRequest: { Item: { ...keyOf(workspaceId, stored.response.id), body, ttl } } },
    ...stored.response.output.map((item) => ({ PutRequest: { Item: { ...itemKeyOf(workspaceId, item.id), body: JSON.stringify(item), ttl } } })),
  ]);
  return true;
}

/** Stored output items by id; a missing or expired one is absent from the map. */
export async function loadItems(workspaceId: string, ids: string[]): Promise<Map<string, ConversationItem>> {
  const found = new Map<string, ConversationItem>();
  await Promise.all(
    [...new Set(ids)].map(async (id) => {
      if (!/^[A-Za-z0-9_-]{1,160}$/.test(id)) return;
      const item = await getItem<{ body: string; ttl: number }>('cache', itemKeyOf(workspaceId, id), true);
      if (item && item.ttl * 1000 > Date.now()) found.set(id, JSON.parse(item.body) as ConversationItem);
    }),
  );
  return found;
}

export async function loadResponse(workspaceId: string, id: string): Promise<StoredResponse | undefined> {
  if (!/^resp_[A-Za-z0-9_-]{1,120}$/.test(id)) return undefined;
  const item = await getItem<{ body: string; ttl: number }>('cache', keyOf(workspaceId, id), true);
  // TTL deletes lazily: an expired item is gone for the API at once.
  if (!item || item.ttl * 1000 <= Date.now()) return undefined;
  return JSON.parse(item.body) as StoredResponse;
}

export async function deleteResponse(workspaceId: string, id: string): Promise<boolean> {
  if (!/^resp_[A-Za-z0-9_-]{1,120}$/.test(id)) return false;
  return deleteItem('cache', keyOf(workspaceId, id), 'attribute_exists(pk)');
}
