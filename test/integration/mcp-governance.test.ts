import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, type McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startFakeMcp, type FakeMcp } from '../support/fake-mcp';
import { rpcError, toolText } from '../support/mcp-client';
import { call, errorOf, logsOf, startTestGateway } from '../support/gateway';

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
  // Metrics on (off by default in tests): the EMF test reads them.
  gw = await startTestGateway({ env: { POWERTOOLS_METRICS_DISABLED: 'false' } });
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

describe('a key limited to some MCP servers and tools (allowed_mcp)', () => {
  it('lists and calls only what the key may, and refuses the rest naming the rule', async () => {
    const key = await newKey({ allowed_mcp: [{ server: 'tools', tools: ['echo'] }] });
    const client = await connect('/v1/mcp', key);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['tools__echo']);
    expect(toolText(await client.callTool({ name: 'tools__echo', arguments: { text: 'hi' } }))).toBe('echo: hi');
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
    expect(toolText(await client.callTool({ name: 'secure__whoami' }))).toBe('secure ok');
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

describe('rate-limit policies that count tool calls', () => {
  it('refuses the call over the limit with the retry-after, counting only matching calls', async () => {
    const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'limited', scopes: ['gateway'] } });
    const keyId = created.body.id as string;
    const policy = await call(gw, 'POST', '/v1/policies/rate-limits', {
      body: {
        name: 'three echoes',
        type: 'tool_calls',
        unit: 'rph',
        value: 3,
        conditions: [
          { key: 'api_key', value: keyId },
          { key: 'mcp_server', value: 'tools' },
          { key: 'mcp_tool', value: 'echo' },
        ],
      },
    });
    expect(policy.status, policy.text).toBe(200);
    // A requests policy of 1 for the same key: tool calls are not model requests, it never counts them.
    const requests = await call(gw, 'POST', '/v1/policies/rate-limits', {
      body: { type: 'requests', unit: 'rph', value: 1, conditions: [{ key: 'api_key', value: keyId }] },
    });
    expect(requests.status).toBe(200);

    const client = await connect('/v1/mcp', created.body.secret as string);
    for (let i = 0; i < 3; i++) expect(toolText(await client.callTool({ name: 'tools__echo', arguments: { text: `n${i}` } }))).toBe(`echo: n${i}`);
    const refused = await rpcError(client.callTool({ name: 'tools__echo', arguments: { text: 'one too many' } }));
    expect(refused.code).toBe(-32029);
    expect(refused.message).toContain("policy 'three echoes'");
    expect(refused.message).toContain('3 tool calls per hour');
    const data = refused.data as { retry_after: number; headers: Record<string, string>; code: string };
    expect(data.code).toBe('rate_limit_exceeded');
    expect(data.retry_after).toBeGreaterThan(0);
    expect(data.retry_after).toBeLessThanOrEqual(3600);
    expect(data.headers['x-ratelimit-limit-tool-calls']).toBe('3');
    expect(data.headers['x-ratelimit-remaining-tool-calls']).toBe('0');
    // Other tools and servers are not counted by the policy's conditions.
    for (let i = 0; i < 4; i++) expect((await client.callTool({ name: 'tools__fail' })).isError).toBe(true);
    expect(toolText(await client.callTool({ name: 'secure__whoami' }))).toBe('secure ok');
    await client.close();
    // Another key is not limited by this key's policy.
    const other = await connect('/v1/mcp/tools', await newKey());
    expect(toolText(await other.callTool({ name: 'echo', arguments: { text: 'free' } }))).toBe('echo: free');
    await other.close();
  });

  it('admits exactly the limit of concurrent calls (the counters are conditional writes)', async () => {
    const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'racing', scopes: ['gateway'] } });
    const policy = await call(gw, 'POST', '/v1/policies/rate-limits', {
      body: { type: 'tool_calls', unit: 'rph', value: 5, conditions: [{ key: 'api_key', value: created.body.id }] },
    });
    expect(policy.status).toBe(200);
    const clients = await Promise.all(Array.from({ length: 4 }, () => connect('/v1/mcp', created.body.secret as string)));
    const outcomes = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) =>
        clients[i % clients.length]!.callTool({ name: 'tools__echo', arguments: { text: `r${i}` } }, undefined, { timeout: 30_000 }),
      ),
    );
    const refusals = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected').map((o) => (o.reason as McpError).code);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(5);
    expect(refusals).toEqual(Array.from({ length: 7 }, () => -32029));
    await Promise.all(clients.map((c) => c.close()));
  });

  it("puts the policy's headers on the HTTP answer, as on a model request", async () => {
    const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'headers', scopes: ['gateway'] } });
    const policy = await call(gw, 'POST', '/v1/policies/rate-limits', {
      body: { type: 'tool_calls', unit: 'rph', value: 1, conditions: [{ key: 'api_key', value: created.body.id }] },
    });
    expect(policy.status).toBe(200);
    const toolCall = () =>
      fetch(`${gw.url}/v1/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${created.body.secret}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'tools__echo', arguments: { text: 'h' } } }),
      });
    const admitted = await toolCall();
    expect(admitted.status).toBe(200);
    expect(((await admitted.json()) as { result: unknown }).result).toBeDefined();
    expect(admitted.headers.get('x-ratelimit-limit-tool-calls')).toBe('1');
    expect(admitted.headers.get('x-ratelimit-remaining-tool-calls')).toBe('0');
    const refused = await toolCall();
    expect(refused.status).toBe(200);
    expect(((await refused.json()) as { error: { code: number } }).error.code).toBe(-32029);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.headers.get('x-ratelimit-remaining-tool-calls')).toBe('0');
  });

  it('validates the new type and condition keys', async () => {
    const bad = await call(gw, 'POST', '/v1/policies/rate-limits', {
      body: { type: 'tool_calls', unit: 'rpm', value: 1, conditions: [{ key: 'mcp_toolz', value: 'x' }] },
    });
    expect(bad.status).toBe(400);
    expect(errorOf(bad).param).toBe('conditions[0].key');
    expect(errorOf(bad).message).toContain('mcp_server');
  });
});

describe('guardrails on tool calls', () => {
  let key: string;
  let argsGuardrail: string;
  let configId: string;
  beforeAll(async () => {
    const args = await call(gw, 'POST', '/v1/guardrails', {
      body: {
        name: 'No forbidden arguments',
        checks: [{ id: 'default.regexMatch', parameters: { rule: 'forbidden', not: true } }],
        actions: { onFail: 'block', deny: true },
      },
    });
    const results = await call(gw, 'POST', '/v1/guardrails', {
      body: {
        name: 'No leaked results',
        checks: [{ id: 'default.regexMatch', parameters: { rule: 'echo: leak', not: true } }],
        actions: { onFail: 'block', deny: true },
      },
    });
    expect(args.status, args.text).toBe(200);
    expect(results.status, results.text).toBe(200);
    const config = await call(gw, 'POST', '/v1/configs', {
      body: { name: 'guarded tools', config: { provider: 'openai', input_guardrails: [args.body.id], output_guardrails: [results.body.slug] } },
    });
    expect(config.status, config.text).toBe(200);
    key = await newKey({ default_config: config.body.id });
    configId = config.body.id;
    argsGuardrail = args.body.id;
  });

  it('blocks a call whose arguments fail an input guardrail', async () => {
    const client = await connect('/v1/mcp', key);
    expect(toolText(await client.callTool({ name: 'tools__echo', arguments: { text: 'fine' } }))).toBe('echo: fine');
    const blocked = await rpcError(client.callTool({ name: 'tools__echo', arguments: { text: 'a forbidden word' } }));
    expect(blocked.code).toBe(-32046);
    expect(blocked.message).toContain("arguments were blocked by guardrail '");
    const data = blocked.data as { guardrail: string; code: string };
    expect(data.code).toBe('guardrail_blocked');
    expect(data.guardrail).toBe(argsGuardrail);
    await client.close();
  });

  it('blocks a result that fails an output guardrail', async () => {
    const client = await connect('/v1/mcp/tools', key);
    const blocked = await rpcError(client.callTool({ name: 'echo', arguments: { text: 'leak' } }));
    expect(blocked.code).toBe(-32046);
    expect(blocked.message).toContain("result was blocked by guardrail '");
    await client.close();
  });

  it('applies the guardrails of a config sent in x-gateway-config too', async () => {
    const client = await connect('/v1/mcp', await newKey(), { 'x-gateway-config': configId });
    expect((await rpcError(client.callTool({ name: 'tools__echo', arguments: { text: 'forbidden' } }))).code).toBe(-32046);
    await client.close();
    const unknown = await connect('/v1/mcp', await newKey(), { 'x-gateway-config': 'no-such-config' });
    const err = await rpcError(unknown.callTool({ name: 'tools__echo', arguments: { text: 'x' } }));
    expect(err.code).toBe(ErrorCode.InvalidParams);
    expect(err.message).toContain("No saved config 'no-such-config'");
    await unknown.close();
  });
});

describe('the request log of tool calls', () => {
  it('records every tools/call with its server, tool, outcome, sizes, metadata and trace id, filterable', async () => {
    const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'logged', scopes: ['gateway'], allowed_mcp: [{ server: 'tools' }] } });
    const trace = `trace-mcp-${Date.now()}`;
    const client = await connect('/v1/mcp', created.body.secret as string, {
      'x-gateway-trace-id': trace,
      'x-gateway-metadata': JSON.stringify({ _user: `u-${trace}`, team: 'agents' }),
    });
    expect(toolText(await client.callTool({ name: 'tools__echo', arguments: { text: 'logged' } }))).toBe('echo: logged');
    expect((await client.callTool({ name: 'tools__fail' })).isError).toBe(true);
    await rpcError(client.callTool({ name: 'secure__whoami' }));
    await client.close();

    const logs = await logsOf(gw, `trace_id=${trace}&kind=mcp`, 3);
    expect(logs.status).toBe(200);
    const records = logs.body.data as Array<Record<string, unknown>>;
    expect(records).toHaveLength(3);
    const echo = records.find((r) => r.mcp_tool === 'echo')!;
    expect(echo).toMatchObject({
      kind: 'mcp',
      route: 'mcp.tools.call',
      path: '/v1/mcp',
      trace_id: trace,
      api_key_id: created.body.id,
      mcp_server: 'tools',
      mcp_status: 'ok',
      is_error: false,
      status: 200,
      request_bytes: JSON.stringify({ text: 'logged' }).length,
      metadata: { _user: `u-${trace}`, team: 'agents' },
      cost_usd: 0,
    });
    expect(echo.response_bytes).toBeGreaterThan(10);
    expect(echo.latency_ms).toEqual(expect.any(Number));
    expect(echo.upstream_latency_ms).toEqual(expect.any(Number));
    // Neither arguments nor results are stored.
    expect(JSON.stringify(echo)).not.toContain('echo: logged');
    expect(records.find((r) => r.mcp_tool === 'fail')).toMatchObject({ mcp_status: 'error', is_error: true, status: 200 });
    expect(records.find((r) => r.mcp_server === 'secure')).toMatchObject({
      mcp_tool: 'whoami',
      mcp_status: 'refused',
      status: 403,
      metadata: { _user: `u-${trace}` },
    });

    const byTool = await logsOf(gw, `trace_id=${trace}&mcp_server=tools&mcp_tool=fail`);
    expect((byTool.body.data as Array<{ mcp_tool: string }>).map((r) => r.mcp_tool)).toEqual(['fail']);
    const refused = await logsOf(gw, `metadata._user=u-${trace}&mcp_status=refused`);
    expect((refused.body.data as Array<{ mcp_server: string }>).map((r) => r.mcp_server)).toEqual(['secure']);
  });

  it("records a slow server's timeout within its timeout_ms", async () => {
    const trace = `trace-stall-${Date.now()}`;
    const client = await connect('/v1/mcp/tools', await newKey(), { 'x-gateway-trace-id': trace });
    const started = Date.now();
    const stalled = await rpcError(client.callTool({ name: 'stall' }, undefined, { timeout: 20_000 }));
    expect(stalled.code).toBe(ErrorCode.RequestTimeout);
    expect(Date.now() - started).toBeLessThan(5_000);
    await client.close();
    const logs = await logsOf(gw, `trace_id=${trace}&kind=mcp`);
    expect(logs.body.data).toHaveLength(1);
    const record = logs.body.data[0] as Record<string, unknown>;
    expect(record).toMatchObject({ mcp_server: 'tools', mcp_tool: 'stall', mcp_status: 'timeout', status: 504, response_bytes: null });
    expect(record.error).toContain('did not answer within 1000 ms');
    expect(record.upstream_latency_ms as number).toBeGreaterThanOrEqual(900);
    expect(record.latency_ms as number).toBeLessThan(5_000);
  });
});

describe('EMF metrics of tool calls', () => {
  it('counts calls, errors and latency per server', async () => {
    let out = '';
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out += String(chunk);
      return true;
    });
    try {
      const client = await connect('/v1/mcp', await newKey());
      await client.callTool({ name: 'secure__whoami' });
      await client.callTool({ name: 'secure__whoami' });
      await client.callTool({ name: 'tools__fail' });
      await client.close();
      type Emf = Record<string, unknown> & { mcp_server?: string };
      const of = (server: string, name: string): number[] =>
        out
          .split('\n')
          .filter((l) => l.includes('"CloudWatchMetrics"') && l.includes('"ToolCalls"'))
          .map((l) => JSON.parse(l) as Emf)
          .filter((d) => d.mcp_server === server)
          .flatMap((d) => (d[name] === undefined ? [] : Array.isArray(d[name]) ? (d[name] as number[]) : [d[name] as number]));
      for (let i = 0; i < 50 && (of('secure', 'ToolCalls').length < 2 || of('tools', 'ToolCalls').length < 1); i++)
        await new Promise((r) => setTimeout(r, 100));
      expect(of('secure', 'ToolCalls')).toEqual([1, 1]);
      expect(of('secure', 'ToolErrors')).toEqual([0, 0]);
      expect(of('secure', 'ToolLatency')).toHaveLength(2);
      expect(of('tools', 'ToolErrors')).toEqual([1]);
    } finally {
      spy.mockRestore();
    }
  });
});
