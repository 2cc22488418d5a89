import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startChildGateway } from '../support/child-gateway';
import { startFakeMcp, type FakeMcp } from '../support/fake-mcp';
import { getItem, updateItem } from '../../functions/shared/db/ops';
import { call, startTestGateway } from '../support/gateway';

// Sessions of /v1/mcp (Mcp-Session-Id) kept in DynamoDB: docs/mcp.md, "Sessions".

let gw: LocalGateway;
let fake: FakeMcp;
let gatewayKey: string;
/** Another key of the same workspace, and a key of another workspace. */
let sameWorkspaceKey: string;
let otherWorkspaceKey: string;
let workspaceId: string;

const newKey = async (body: Record<string, unknown>) => {
  const res = await call(gw, 'POST', '/v1/api-keys', { body: { scopes: ['gateway'], ...body } });
  expect(res.status, res.text).toBe(200);
  return res.body.secret as string;
};

beforeAll(async () => {
  fake = await startFakeMcp();
  gw = await startTestGateway();
  gatewayKey = await newKey({ name: 'mcp sessions' });
  workspaceId = (await call(gw, 'GET', '/v1/api-keys')).body.data[0].workspace_id;
  sameWorkspaceKey = await newKey({ name: 'mcp sessions, another key' });
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'MCP sessions elsewhere' } });
  otherWorkspaceKey = await newKey({ name: 'elsewhere', workspace_id: ws.body.id });
  const res = await call(gw, 'POST', '/v1/mcp-servers', { body: { slug: 'tools', url: `${fake.url}/tools`, allowed_tools: ['echo'] } });
  expect(res.status, res.text).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

const ACCEPT = 'application/json, text/event-stream';

/** One JSON-RPC POST; `session` and `version` become the MCP headers. */
async function rpc(
  path: string,
  message: Record<string, unknown>,
  opts: { key?: string; session?: string; version?: string; base?: string } = {},
): Promise<{ status: number; session: string | null; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${opts.key ?? gatewayKey}`, 'content-type': 'application/json', accept: ACCEPT };
  if (opts.session) headers['mcp-session-id'] = opts.session;
  if (opts.version) headers['mcp-protocol-version'] = opts.version;
  const res = await fetch(`${opts.base ?? gw.url}${path}`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', ...message }) });
  const text = await res.text();
  return { status: res.status, session: res.headers.get('mcp-session-id'), body: text ? JSON.parse(text) : undefined };
}

const initialize = (path: string, protocolVersion: string, opts: { key?: string; base?: string } = {}) =>
  rpc(path, { id: 1, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }, opts);

const toolsList = (path: string, opts: { key?: string; session?: string; version?: string; base?: string }) => rpc(path, { id: 2, method: 'tools/list' }, opts);

async function bare(method: 'GET' | 'DELETE', path: string, session?: string, key = gatewayKey): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, accept: ACCEPT };
  if (session) headers['mcp-session-id'] = session;
  return fetch(gw.url + path, { method, headers });
}

describe('MCP sessions', () => {
  it('the SDK client gets a session, uses it, and ends it; the ended session is then unknown (404)', async () => {
    const transport = new StreamableHTTPClientTransport(new URL(`${gw.url}/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${gatewayKey}` } } });
    const client = new Client({ name: 'sdk', version: '1.0.0' });
    await client.connect(transport);
    const session = transport.sessionId;
    expect(session).toMatch(/^[0-9a-f]{32}$/);
    expect(transport.protocolVersion).toBe(LATEST_PROTOCOL_VERSION);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['tools__echo']);
    const result = await client.callTool({ name: 'tools__echo', arguments: { text: 'in a session' } });
    expect(result.content).toEqual([{ type: 'text', text: 'echo: in a session' }]);
    await transport.terminateSession();
    expect(transport.sessionId).toBeUndefined();
    await client.close();

    const after = await toolsList('/v1/mcp', { session, version: LATEST_PROTOCOL_VERSION });
    expect(after.status).toBe(404);
    expect(after.body.error.code).toBe(-32001);
    expect((await bare('DELETE', '/v1/mcp', session)).status).toBe(404);
  });

  it('negotiates 2025-06-18 and the newest revision, and refuses an unsupported or different version (400)', async () => {
    for (const version of ['2025-06-18', LATEST_PROTOCOL_VERSION]) {
      const init = await initialize('/v1/mcp', version);
      expect(init.status).toBe(200);
      expect(init.body.result.protocolVersion).toBe(version);
      expect(init.session).toMatch(/^[0-9a-f]{32}$/);
      const list = await toolsList('/v1/mcp', { session: init.session!, version });
      expect(list.status).toBe(200);
      expect(list.body.result.tools.map((t: { name: string }) => t.name)).toEqual(['tools__echo']);
      // Without the header, the negotiated version is assumed.
      expect((await toolsList('/v1/mcp', { session: init.session! })).status).toBe(200);
      const unsupported = await toolsList('/v1/mcp', { session: init.session!, version: '1999-01-01' });
      expect(unsupported.status).toBe(400);
      expect(unsupported.body.error.message).toContain('Unsupported protocol version: 1999-01-01');
      const other = version === '2025-06-18' ? LATEST_PROTOCOL_VERSION : '2025-06-18';
      const different = await toolsList('/v1/mcp', { session: init.session!, version: other });
      expect(different.status).toBe(400);
      expect(different.body.error.message).toContain(`this session negotiated ${version}`);
    }
    // An unknown version asked at initialize gets the newest (the spec's negotiation).
    const old = await initialize('/v1/mcp', '1999-01-01');
    expect(old.body.result.protocolVersion).toBe(LATEST_PROTOCOL_VERSION);
    // Without a session, the SDK still refuses an unsupported header.
    expect((await toolsList('/v1/mcp', { version: '1999-01-01' })).status).toBe(400);
  });

  it('binds a session to its key and endpoint: another key, workspace or endpoint gets 404', async () => {
    const init = await initialize('/v1/mcp', '2025-06-18');
    const session = init.session!;
    for (const key of [sameWorkspaceKey, otherWorkspaceKey]) {
      const res = await toolsList('/v1/mcp', { session, key });
      expect(res.status).toBe(404);
      expect(res.body.error.message).toContain('Session not found');
      expect((await bare('DELETE', '/v1/mcp', session, key)).status).toBe(404);
    }
    expect((await toolsList('/v1/mcp/tools', { session })).status).toBe(404);
    expect((await toolsList('/v1/mcp', { session: 'f'.repeat(32) })).status).toBe(404);
    expect((await toolsList('/v1/mcp', { session: 'x'.repeat(500) })).status).toBe(404);
    // The owner's session survived those attempts.
    expect((await toolsList('/v1/mcp', { session })).status).toBe(200);
  });

  it('expires after an hour idle, and each use (at most once a minute) pushes the expiry', async () => {
    const session = (await initialize('/v1/mcp', '2025-06-18')).session!;
    const key = { pk: `WS#${workspaceId}`, sk: `MCPSESSION#${session}` };
    const now = Math.floor(Date.now() / 1000);
    const stored = await getItem<{ ttl: number; last_seen_at: number; client_info: unknown; protocol_version: string }>('sessions', key, true);
    expect(stored).toMatchObject({ client_info: { name: 'raw', version: '1' }, protocol_version: '2025-06-18' });
    expect(stored!.ttl - now).toBeGreaterThan(3500);
    // Last seen two minutes ago, ten seconds left: a use pushes the expiry an hour on.
    await updateItem('sessions', key, { set: { last_seen_at: now - 120, ttl: now + 10 } });
    expect((await toolsList('/v1/mcp', { session })).status).toBe(200);
    const touched = await getItem<{ ttl: number; last_seen_at: number }>('sessions', key, true);
    expect(touched!.ttl - now).toBeGreaterThan(3500);
    expect(touched!.last_seen_at).toBeGreaterThanOrEqual(now);
    // Seen just now: no write.
    expect((await toolsList('/v1/mcp', { session })).status).toBe(200);
    expect((await getItem<{ ttl: number }>('sessions', key, true))!.ttl).toBe(touched!.ttl);
    // Past its expiry (TTL has not swept it yet): gone all the same.
    await updateItem('sessions', key, { set: { ttl: now - 1 } });
    expect((await toolsList('/v1/mcp', { session })).status).toBe(404);
  });

  it('serves clients that never send a session id (POST), and needs one for DELETE (400)', async () => {
    const list = await toolsList('/v1/mcp', {});
    expect(list.status).toBe(200);
    expect(list.body.result.tools.map((t: { name: string }) => t.name)).toEqual(['tools__echo']);
    const del = await bare('DELETE', '/v1/mcp');
    expect(del.status).toBe(400);
    expect(((await del.json()) as { error: { message: string } }).error.message).toContain('Mcp-Session-Id header is required');
    expect((await bare('DELETE', '/v1/mcp/tools')).status).toBe(400);
  });

  it('sessions of /v1/mcp/{slug} work the same way', async () => {
    const init = await initialize('/v1/mcp/tools', '2025-06-18');
    expect(init.status).toBe(200);
    expect(init.session).toMatch(/^[0-9a-f]{32}$/);
    const list = await toolsList('/v1/mcp/tools', { session: init.session!, version: '2025-06-18' });
    expect(list.body.result.tools.map((t: { name: string }) => t.name)).toEqual(['echo']);
    expect((await bare('DELETE', '/v1/mcp/tools', init.session!)).status).toBe(200);
    expect((await toolsList('/v1/mcp/tools', { session: init.session! })).status).toBe(404);
  });

  it('a session opened on one gateway process is served, and ended, by another sharing the tables', async () => {
    const child = await startChildGateway(gw);
    try {
      const init = await initialize('/v1/mcp', '2025-06-18', { base: child.url });
      expect(init.status).toBe(200);
      const session = init.session!;
      for (const base of [gw.url, child.url, gw.url]) {
        const res = await rpc(
          '/v1/mcp',
          { id: 3, method: 'tools/call', params: { name: 'tools__echo', arguments: { text: base } } },
          { session, base, version: '2025-06-18' },
        );
        expect(res.status).toBe(200);
        expect(res.body.result.content[0].text).toBe(`echo: ${base}`);
      }
      expect((await bare('DELETE', '/v1/mcp', session)).status).toBe(200);
      expect((await toolsList('/v1/mcp', { session, base: child.url })).status).toBe(404);
    } finally {
      await child.stop();
    }
  }, 90_000);
});
