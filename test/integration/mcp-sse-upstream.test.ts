import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startFakeMcp, type FakeMcp } from '../support/fake-mcp';
import { call, startTestGateway } from '../support/gateway';

// Registered servers that speak only the older HTTP+SSE transport (2024-11-05): docs/mcp.md.

let gw: LocalGateway;
let fake: FakeMcp;
let gatewayKey: string;

beforeAll(async () => {
  fake = await startFakeMcp();
  gw = await startTestGateway();
  const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'mcp sse', scopes: ['gateway'] } });
  gatewayKey = key.body.secret;
  for (const body of [
    { slug: 'legacy', url: `${fake.url}/legacy`, timeout_ms: 5000 },
    { slug: 'elsewhere', url: `${fake.url}/legacy-elsewhere`, timeout_ms: 5000 },
  ]) {
    const res = await call(gw, 'POST', '/v1/mcp-servers', { body });
    expect(res.status, res.text).toBe(200);
  }
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

async function connect(path: string): Promise<Client> {
  const client = new Client({ name: 'sse-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url + path), { requestInit: { headers: { authorization: `Bearer ${gatewayKey}` } } }));
  return client;
}

describe('an HTTP+SSE (2024-11-05) server behind the gateway', () => {
  it('is reached over SSE when Streamable HTTP is refused (405), on /v1/mcp and /v1/mcp/{slug}', async () => {
    const client = await connect('/v1/mcp');
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('legacy__echo');
    expect(names.some((n) => n.startsWith('elsewhere__'))).toBe(false);
    const result = await client.callTool({ name: 'legacy__echo', arguments: { text: 'over sse' } });
    expect(result.content).toEqual([{ type: 'text', text: 'legacy echo: over sse' }]);
    await client.close();

    const one = await connect('/v1/mcp/legacy');
    expect((await one.listTools()).tools.map((t) => t.name)).toEqual(['echo']);
    // Again, now that the container knows the server speaks SSE.
    expect((await one.callTool({ name: 'echo', arguments: { text: 'again' } })).content).toEqual([{ type: 'text', text: 'legacy echo: again' }]);
    await one.close();
  });

  it('refuses a POST endpoint the server announces on another origin, with a clear error, sending it nothing', async () => {
    const client = await connect('/v1/mcp');
    const err = await client.callTool({ name: 'elsewhere__echo', arguments: { text: 'x' } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(McpError);
    expect((err as McpError).message).toContain("MCP server 'elsewhere'");
    expect((err as McpError).message).toContain('origin');
    expect(fake.elsewhereHits()).toBe(0);
    await client.close();
  });
});
