import { randomBytes } from 'node:crypto';
import { deleteItem, getItem, putNew, updateItem } from '../shared/db/ops';

/**
 * Sessions of `/v1/mcp` and `/v1/mcp/{slug}` (`Mcp-Session-Id`), in the sessions table so
 * that any container serves any request of a session. A session belongs to the gateway key
 * that opened it (and so to its workspace, the partition): another key gets "not found".
 * Expiry slides: a session unused for SESSION_IDLE_SECONDS is gone; each use pushes the
 * expiry, at most once per TOUCH_INTERVAL_SECONDS to keep writes low. The expiry is checked
 * on every read (DynamoDB's TTL deletes late), the TTL only sweeps.
 */

export const SESSION_IDLE_SECONDS = 3600;
const TOUCH_INTERVAL_SECONDS = 60;

export interface McpSession {
  id: string;
  workspace_id: string;
  key_id: string;
  /** `/v1/mcp` or `/v1/mcp/{slug}`: a session serves the endpoint that opened it. */
  endpoint: string;
  protocol_version: string;
  client_info: { name?: string; version?: string };
  created_at: number;
  last_seen_at: number;
  /** Unix seconds; the table's TTL attribute. */
  ttl: number;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);
const sessionKey = (workspaceId: string, id: string) => ({ pk: `WS#${workspaceId}`, sk: `MCPSESSION#${id}` });

/** 128 random bits, hex: unguessable, and only visible ASCII as the spec asks. */
export const newSessionId = () => randomBytes(16).toString('hex');

export async function createSession(session: Omit<McpSession, 'created_at' | 'last_seen_at' | 'ttl'>): Promise<McpSession> {
  const now = nowSeconds();
  const record: McpSession = { ...session, created_at: now, last_seen_at: now, ttl: now + SESSION_IDLE_SECONDS };
  // A collision of 128 random bits does not happen; the condition keeps one from overwriting.
  if (!(await putNew('sessions', { ...sessionKey(session.workspace_id, session.id), ...record }))) throw new Error('MCP session id collision');
  return record;
}

/** The live session with this id, opened by this key on this endpoint; undefined when unknown, expired or someone else's. */
export async function findSession(workspaceId: string, keyId: string, endpoint: string, id: string): Promise<McpSession | undefined> {
  // Strongly consistent: a session ended (or opened) by another container is seen at once.
  const item = await getItem<McpSession>('sessions', sessionKey(workspaceId, id), true);
  const now = nowSeconds();
  if (!item || item.key_id !== keyId || item.endpoint !== endpoint || item.ttl <= now) return undefined;
  if (now - item.last_seen_at >= TOUCH_INTERVAL_SECONDS) {
    // Conditional: a session deleted meanwhile stays deleted.
    await updateItem('sessions', sessionKey(workspaceId, id), {
      set: { last_seen_at: now, ttl: now + SESSION_IDLE_SECONDS },
      condition: 'attribute_exists(#pk) AND #key_id = :key',
      conditionValues: { ':key': keyId },
    });
  }
  return item;
}

/** End a session (the caller has found it with findSession); false when it was already gone. */
export function deleteSession(workspaceId: string, id: string): Promise<boolean> {
  return deleteItem('sessions', sessionKey(workspaceId, id), 'attribute_exists(pk)');
}
