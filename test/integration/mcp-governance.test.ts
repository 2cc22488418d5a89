import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startFakeMcp, type FakeMcp } from '../support/fake-mcp';
import { call, errorOf, startTestGateway } from '../support/gateway';

/**
 * Governance of tool traffic through the SDK's client on /v1/mcp and /v1/mcp/{slug}: key
 * allow-lists, rate-limit policies counting tool calls, guardrails on arguments and
 * results, and the request-log record of every tools/call. Two fake servers: `tools` (echo,
 * fail, stall, large) and `secure` (whoami behind static-header auth).
 */

let gw: LocalGateway;
let fake: FakeMcp;

async function newKey(body: Record<string, unknown> = {}): Promise<string> {
  const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'mcp governed', scopes: ['gateway'], ...body } });
  expect(key.status, key.text).toBe(200);
  return key.body.secret as string;
}

beforeAll(async () => {
  fake = await startFakeMcp(64 * 1024);
  gw = await startTestGateway();
  const servers = [
    { slug: 'tools', url: `${fake.url}/tools`, timeout_ms: 1000, allowed_tools: ['echo', 'fail', 'stall', 'large'] },
    { slug: 'secure', url: `${fake.url}/secure`, auth: { type: 'headers', headers: { 'x-api-token': fake.headerToken } } },
  ];
  for (const body of servers) expect((await call(gw, 'POST', '/v1/mcp-servers', { body })).status).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

async function connect(path: string, key: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'governance-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url + path), { requestInit: { headers: { authorization: `Bearer ${key}`, ...headers } } }));
  return client;
}

const textOf = (result: unknown) => (result as { content: { type: string; text: string }[] }).content[0]!.text;

async function rpcError(promise: Promise<unknown>): Promise<McpError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(McpError);
  return err as McpError;
}

describe('a key limited to some MCP servers and tools (allowed_mcp)', () => {
  it('lists and calls only what the key may, and refuses the rest naming the rule', async () => {
    const key = await newKey({ allowed_mcp: [{ server: 'tools', tools: ['echo'] }] });
    const client = await connect('/v1/mcp', key);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['tools__echo']);
    expect(textOf(await client.callTool({ name: 'tools__echo', arguments: { text: 'hi' } }))).toBe('echo: hi');
    const tool = await rpcError(client.callTool({ name: 'tools__fail' }));
    expect(tool.code).toBe(ErrorCode.InvalidParams);
    expect(tool.message).toContain("may not call tool 'fail' of MCP server 'tools'");
    expect(tool.message).toContain('allowed_mcp');
    const server = await rpcError(client.callTool({ name: 'secure__whoami' }));
    expect(server.message).toContain("may not use MCP server 'secure'");
    expect(server.data).toEqual({ rule: 'allowed_mcp' });
    await client.close();

    const one = await connect('/v1/mcp/tools', key);
    expect((await one.listTools()).tools.map((t) => t.name)).toEqual(['echo']);
    expect((await rpcError(one.callTool({ name: 'fail' }))).message).toContain('allowed_mcp');
    await one.close();
    const other = await connect('/v1/mcp/secure', key);
    expect((await rpcError(other.listTools())).message).toContain("may not use MCP server 'secure'");
    expect((await rpcError(other.callTool({ name: 'whoami' }))).message).toContain('allowed_mcp');
    await other.close();
  });

  it('gives a whole server when the entry names no tools; the server allowed_tools still apply', async () => {
    const key = await newKey({ allowed_mcp: [{ server: 'secure' }, { server: 'tools', tools: null }] });
    const client = await connect('/v1/mcp', key);
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual([
      'secure__whoami',
      'tools__echo',
      'tools__fail',
      'tools__large',
      'tools__stall',
    ]);
    expect(textOf(await client.callTool({ name: 'secure__whoami' }))).toBe('secure ok');
    expect((await rpcError(client.callTool({ name: 'tools__hidden' }))).message).toContain('allowed_tools');
    await client.close();
  });

  it('is shown, changed and cleared through the keys API, and validated there', async () => {
    const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'k', allowed_mcp: [{ server: 'tools', tools: ['echo'] }] } });
    expect(created.body.allowed_mcp).toEqual([{ server: 'tools', tools: ['echo'] }]);
    const id = created.body.id as string;
    const client = await connect('/v1/mcp', created.body.secret as string);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['tools__echo']);

    const changed = await call(gw, 'PUT', `/v1/api-keys/${id}`, { body: { allowed_mcp: [{ server: 'secure' }] } });
    expect(changed.status).toBe(200);
    expect(changed.body.allowed_mcp).toEqual([{ server: 'secure' }]);
    expect((await call(gw, 'GET', `/v1/api-keys/${id}`)).body.allowed_mcp).toEqual([{ server: 'secure' }]);
    const cleared = await call(gw, 'PUT', `/v1/api-keys/${id}`, { body: { allowed_mcp: null } });
    expect(cleared.body.allowed_mcp).toBeNull();
    expect((await call(gw, 'POST', '/v1/api-keys', { body: { name: 'plain' } })).body.allowed_mcp).toBeNull();
    await client.close();

    const badSlug = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'k', allowed_mcp: [{ server: 'Not A Slug' }] } });
    expect(badSlug.status).toBe(400);
    expect(errorOf(badSlug).param).toBe('allowed_mcp[0].server');
    const twice = await call(gw, 'PUT', `/v1/api-keys/${id}`, { body: { allowed_mcp: [{ server: 'tools' }, { server: 'tools', tools: ['echo'] }] } });
    expect(twice.status).toBe(400);
    expect(errorOf(twice).param).toBe('allowed_mcp[1].server');
    const notList = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'k', allowed_mcp: { server: 'tools' } } });
    expect(notList.status).toBe(400);
    expect(errorOf(notList).param).toBe('allowed_mcp');
  });
});
