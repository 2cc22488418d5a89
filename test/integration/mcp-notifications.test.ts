import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  LoggingMessageNotificationSchema,
  type Notification,
  type Progress,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startFakeMcp, type FakeMcp } from '../support/fake-mcp';
import { call, startTestGateway } from '../support/gateway';

// The server-sent stream of /v1/mcp/{slug} (GET with a session) and progress on tools/call:
// docs/mcp.md, "Notifications".

let gw: LocalGateway;
let fake: FakeMcp;
let gatewayKey: string;

beforeAll(async () => {
  fake = await startFakeMcp();
  gw = await startTestGateway();
  const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'mcp notifications', scopes: ['gateway'] } });
  expect(key.status).toBe(200);
  gatewayKey = key.body.secret;
  const res = await call(gw, 'POST', '/v1/mcp-servers', { body: { slug: 'live', url: `${fake.url}/live`, timeout_ms: 5000 } });
  expect(res.status, res.text).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

async function connect(path: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(gw.url + path), { requestInit: { headers: { authorization: `Bearer ${gatewayKey}` } } });
  const client = new Client({ name: 'listener', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

async function until(what: string, check: () => boolean, withinMs: number): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('GET /v1/mcp/{slug}: the server-sent stream of a session', () => {
  it("relays the server's notifications to the SDK client, and closes the upstream stream when the client leaves", async () => {
    const { client } = await connect('/v1/mcp/live');
    const got: Notification[] = [];
    client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => void got.push(n));
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void got.push(n));
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void got.push(n));
    // The gateway holds one connection to the server for this stream (a tools/call holds none after it).
    await until('the relay is connected to the server', () => fake.liveStreams() === 1, 10_000);

    const result = await client.callTool({ name: 'announce' });
    expect(result.content).toEqual([{ type: 'text', text: expect.stringMatching(/^announced to \d+$/) }]);
    await until('three notifications', () => got.length >= 3, 5_000);
    expect(got.map((n) => n.method).sort()).toEqual(['notifications/message', 'notifications/resources/updated', 'notifications/tools/list_changed']);
    expect(got.find((n) => n.method === 'notifications/resources/updated')?.params).toMatchObject({ uri: 'fake://live' });
    expect(got.find((n) => n.method === 'notifications/message')?.params).toMatchObject({ level: 'info', data: 'announced' });

    const left = Date.now();
    await client.close();
    await until('the upstream stream is closed', () => fake.liveStreams() === 0, 3_000);
    expect(Date.now() - left).toBeLessThan(3_000);
  });

  it('needs a live session of the caller (400 without one, 404 for an unknown one), and is not offered on /v1/mcp (405)', async () => {
    const headers = { authorization: `Bearer ${gatewayKey}`, accept: 'text/event-stream' };
    const none = await fetch(`${gw.url}/v1/mcp/live`, { headers });
    expect(none.status).toBe(400);
    const unknown = await fetch(`${gw.url}/v1/mcp/live`, { headers: { ...headers, 'mcp-session-id': '0'.repeat(32) } });
    expect(unknown.status).toBe(404);
    const { client, transport } = await connect('/v1/mcp');
    const aggregate = await fetch(`${gw.url}/v1/mcp`, { headers: { ...headers, 'mcp-session-id': transport.sessionId! } });
    expect(aggregate.status).toBe(405);
    await client.close();
  });

  it('answers a GET from a raw client as an event stream with the session id', async () => {
    const init = await fetch(`${gw.url}/v1/mcp/live`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gatewayKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    });
    const session = init.headers.get('mcp-session-id')!;
    const abort = new AbortController();
    const asked = Date.now();
    const stream = await fetch(`${gw.url}/v1/mcp/live`, {
      headers: { authorization: `Bearer ${gatewayKey}`, accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
      signal: abort.signal,
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    expect(stream.headers.get('mcp-session-id')).toBe(session);
    // The headers come at once, not with the first keep-alive (15 s).
    expect(Date.now() - asked).toBeLessThan(5_000);
    await until('the relay is connected to the server', () => fake.liveStreams() === 1, 10_000);
    abort.abort();
    await until('the upstream stream is closed', () => fake.liveStreams() === 0, 3_000);
  });
});

describe('progress on tools/call', () => {
  for (const [path, name] of [
    ['/v1/mcp/live', 'slow'],
    ['/v1/mcp', 'live__slow'],
  ] as const) {
    it(`relays the server's progress notifications to a caller that asked for them (${path})`, async () => {
      const { client } = await connect(path);
      const progress: Progress[] = [];
      const result = await client.callTool({ name }, undefined, { onprogress: (p) => void progress.push(p) });
      expect(result.content).toEqual([{ type: 'text', text: 'slow done' }]);
      expect(progress.map((p) => [p.progress, p.total, p.message])).toEqual([
        [1, 3, 'step 1'],
        [2, 3, 'step 2'],
        [3, 3, 'step 3'],
      ]);
      // Without a progress token the answer is plain JSON.
      expect((await client.callTool({ name })).content).toEqual([{ type: 'text', text: 'slow done' }]);
      await client.close();
    });
  }

  it('answers as an event stream only when the caller asked for progress and accepts SSE', async () => {
    const post = (accept: string, meta?: Record<string, unknown>) =>
      fetch(`${gw.url}/v1/mcp/live`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gatewayKey}`, 'content-type': 'application/json', accept },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'slow', arguments: {}, ...(meta ? { _meta: meta } : {}) } }),
      });
    const streamed = await post('application/json, text/event-stream', { progressToken: 'p1' });
    expect(streamed.headers.get('content-type')).toContain('text/event-stream');
    const text = await streamed.text();
    expect(text.match(/"method":"notifications\/progress"/g)).toHaveLength(3);
    expect(text).toContain('"progressToken":"p1"');
    expect(text).toContain('slow done');
    const json = await post('application/json, text/event-stream');
    expect(json.headers.get('content-type')).toContain('application/json');
    expect(((await json.json()) as { result: { content: unknown } }).result.content).toEqual([{ type: 'text', text: 'slow done' }]);
  });
});
