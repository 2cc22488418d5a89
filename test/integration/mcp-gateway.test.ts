import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startFakeMcp, type FakeMcp } from '../support/fake-mcp';
import { rpcError, toolText } from '../support/mcp-client';
import { call, startTestGateway } from '../support/gateway';

let gw: LocalGateway;
let fake: FakeMcp;
/** A gateway-scope key of the default workspace, and a key of another workspace. */
let gatewayKey: string;
let otherKey: string;

beforeAll(async () => {
  fake = await startFakeMcp();
  gw = await startTestGateway();
  const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'mcp user', scopes: ['gateway'] } });
  expect(key.status).toBe(200);
  gatewayKey = key.body.secret;
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'MCP elsewhere' } });
  const other = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'other', workspace_id: ws.body.id, scopes: ['gateway'] } });
  otherKey = other.body.secret;
  const servers = [
    // 3 s: long enough for the 5 MB `large` answer to reach the size cap on a loaded machine.
    { slug: 'tools', url: `${fake.url}/tools`, timeout_ms: 3000, allowed_tools: ['echo', 'fail', 'stall', 'large'] },
    { slug: 'secure', url: `${fake.url}/secure`, auth: { type: 'headers', headers: { 'x-api-token': fake.headerToken } } },
    {
      slug: 'oauth',
      url: `${fake.url}/oauth`,
      auth: { type: 'oauth_client_credentials', token_url: `${fake.url}/token`, client_id: fake.oauth.clientId, client_secret: fake.oauth.clientSecret },
    },
  ];
  for (const body of servers) expect((await call(gw, 'POST', '/v1/mcp-servers', { body })).status).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

async function connect(path: string, headers: Record<string, string> = { authorization: `Bearer ${gatewayKey}` }): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url + path), { requestInit: { headers } }));
  return client;
}

describe('/v1/mcp: the workspace servers aggregated', () => {
  it('lists the tools of every server as <slug>__<tool>, respecting allowed_tools', async () => {
    const client = await connect('/v1/mcp');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['oauth__whoami', 'secure__whoami', 'tools__echo', 'tools__fail', 'tools__large', 'tools__stall']);
    expect(tools.find((t) => t.name === 'tools__echo')?.inputSchema).toMatchObject({ type: 'object', properties: { text: { type: 'string' } } });
    await client.close();
  });

  it('forwards tools/call to the right server, with its static headers or OAuth token', async () => {
    const client = await connect('/v1/mcp', { 'x-gateway-api-key': gatewayKey });
    expect(toolText(await client.callTool({ name: 'tools__echo', arguments: { text: 'hi' } }))).toBe('echo: hi');
    expect(toolText(await client.callTool({ name: 'secure__whoami' }))).toBe('secure ok');
    const before = fake.tokensIssued();
    expect(toolText(await client.callTool({ name: 'oauth__whoami' }))).toBe('oauth ok');
    expect(toolText(await client.callTool({ name: 'oauth__whoami' }))).toBe('oauth ok');
    // The token is cached until it expires: at most one fetched for these calls.
    expect(fake.tokensIssued() - before).toBeLessThanOrEqual(1);
    expect(fake.tokensIssued()).toBeGreaterThanOrEqual(1);
    const failed = await client.callTool({ name: 'tools__fail' });
    expect(failed.isError).toBe(true);
    expect(toolText(failed)).toBe('the tool failed');
    await client.close();
  });

  it('answers unknown and disallowed tools with clear JSON-RPC errors', async () => {
    const client = await connect('/v1/mcp');
    const unknown = await rpcError(client.callTool({ name: 'nowhere__echo' }));
    expect(unknown.code).toBe(ErrorCode.InvalidParams);
    expect(unknown.message).toContain("Unknown tool 'nowhere__echo'");
    const hidden = await rpcError(client.callTool({ name: 'tools__hidden' }));
    expect(hidden.code).toBe(ErrorCode.InvalidParams);
    expect(hidden.message).toContain('allowed_tools');
    await client.close();
  });

  it('gives a stalled tool a timeout error within the server timeout_ms', async () => {
    const client = await connect('/v1/mcp');
    const started = Date.now();
    const stalled = await rpcError(client.callTool({ name: 'tools__stall' }, undefined, { timeout: 20_000 }));
    expect(stalled.code).toBe(ErrorCode.RequestTimeout);
    expect(stalled.message).toContain("MCP server 'tools' did not answer within 3000 ms");
    expect(Date.now() - started).toBeLessThan(10_000);
    await client.close();
  });

  it('refuses a result over the size cap', async () => {
    const client = await connect('/v1/mcp');
    const large = await rpcError(client.callTool({ name: 'tools__large' }, undefined, { timeout: 20_000 }));
    expect(large.message).toContain('answered more than 4194304 bytes');
    await client.close();
  });

  it('names an unreachable server, and leaves it out of the tool list', async () => {
    expect((await call(gw, 'POST', '/v1/mcp-servers', { body: { slug: 'gone', url: 'http://127.0.0.1:9/mcp', timeout_ms: 1000 } })).status).toBe(200);
    try {
      const client = await connect('/v1/mcp');
      const { tools } = await client.listTools();
      expect(tools.some((t) => t.name.startsWith('gone__'))).toBe(false);
      expect(tools.some((t) => t.name === 'tools__echo')).toBe(true);
      const gone = await rpcError(client.callTool({ name: 'gone__anything' }));
      expect(gone.message).toContain("MCP server 'gone'");
      await client.close();
    } finally {
      await call(gw, 'DELETE', '/v1/mcp-servers/gone');
    }
  });

  it('names the server when its credentials are refused, without leaking them', async () => {
    const bad = [
      {
        slug: 'bad-oauth',
        url: `${fake.url}/oauth`,
        auth: { type: 'oauth_client_credentials', token_url: `${fake.url}/token`, client_id: fake.oauth.clientId, client_secret: 'wrong-secret-value' },
      },
      { slug: 'bad-header', url: `${fake.url}/secure`, auth: { type: 'headers', headers: { 'x-api-token': 'wrong-token-value' } } },
    ];
    for (const body of bad) expect((await call(gw, 'POST', '/v1/mcp-servers', { body })).status).toBe(200);
    try {
      const client = await connect('/v1/mcp');
      const oauth = await rpcError(client.callTool({ name: 'bad-oauth__whoami' }));
      expect(oauth.message).toContain("MCP server 'bad-oauth': its token endpoint refused the client credentials (HTTP 401)");
      const header = await rpcError(client.callTool({ name: 'bad-header__whoami' }));
      expect(header.message).toContain("MCP server 'bad-header'");
      expect(oauth.message + header.message).not.toMatch(/wrong-(secret|token)-value/);
      await client.close();
    } finally {
      for (const { slug } of bad) await call(gw, 'DELETE', `/v1/mcp-servers/${slug}`);
    }
  });

  it('sees a change of a server at once (the data-plane cache is forgotten on write)', async () => {
    const client = await connect('/v1/mcp');
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('tools__fail');
    expect((await call(gw, 'PATCH', '/v1/mcp-servers/tools', { body: { allowed_tools: ['echo'] } })).status).toBe(200);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('tools__echo');
      expect(names).not.toContain('tools__fail');
      expect((await rpcError(client.callTool({ name: 'tools__fail' }))).code).toBe(ErrorCode.InvalidParams);
    } finally {
      await call(gw, 'PATCH', '/v1/mcp-servers/tools', { body: { allowed_tools: ['echo', 'fail', 'stall', 'large'] } });
      await client.close();
    }
  });

  it('negotiates the protocol version: 2025-06-18 as asked, the newest otherwise', async () => {
    const initialize = async (protocolVersion: string) => {
      const res = await fetch(`${gw.url}/v1/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gatewayKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion, capabilities: {}, clientInfo: { name: 't', version: '1' } },
        }),
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { result: { protocolVersion: string } }).result.protocolVersion;
    };
    expect(await initialize('2025-06-18')).toBe('2025-06-18');
    expect(await initialize('1999-01-01')).toBe(LATEST_PROTOCOL_VERSION);
  });

  it('needs a gateway key, and shows each workspace only its own servers', async () => {
    const res = await fetch(`${gw.url}/v1/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
    const client = await connect('/v1/mcp', { authorization: `Bearer ${otherKey}` });
    expect((await client.listTools()).tools).toEqual([]);
    await client.close();
    const get = await fetch(`${gw.url}/v1/mcp`, { headers: { authorization: `Bearer ${gatewayKey}`, accept: 'text/event-stream' } });
    expect(get.status).toBe(405);
  });
});

describe('/v1/mcp/{slug}: one server as it is', () => {
  it('exposes its tools, resources and prompts', async () => {
    const client = await connect('/v1/mcp/tools');
    expect(client.getServerVersion()?.name).toBe('ai-gateway/tools');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['echo', 'fail', 'large', 'stall']);
    expect(toolText(await client.callTool({ name: 'echo', arguments: { text: 'direct' } }))).toBe('echo: direct');
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toEqual(['fake://readme']);
    const read = await client.readResource({ uri: 'fake://readme' });
    expect(read.contents[0]).toMatchObject({ uri: 'fake://readme', text: 'read me' });
    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(['greet']);
    const prompt = await client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } });
    expect(prompt.messages[0]?.content).toEqual({ type: 'text', text: 'Hello Ada' });
    const hidden = await rpcError(client.callTool({ name: 'hidden' }));
    expect(hidden.code).toBe(ErrorCode.InvalidParams);
    await client.close();
  });

  it('answers 404 for a server the workspace does not have', async () => {
    const res = await fetch(`${gw.url}/v1/mcp/tools`, {
      method: 'POST',
      headers: { authorization: `Bearer ${otherKey}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe('slug');
  });
});
