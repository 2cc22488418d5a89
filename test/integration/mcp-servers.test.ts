import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { call, errorOf, startTestGateway } from '../support/gateway';

let gw: LocalGateway;
/** A second workspace with its own admin key: isolation. */
let otherKey: string;

beforeAll(async () => {
  gw = await startTestGateway();
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'MCP other team' } });
  expect(ws.status).toBe(200);
  const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'other admin', workspace_id: ws.body.id, scopes: ['admin', 'gateway'] } });
  expect(key.status).toBe(200);
  otherKey = key.body.secret;
});
afterAll(async () => {
  await gw?.stop();
});

describe('/v1/mcp-servers', () => {
  it('creates, reads, lists, patches and deletes a server; header values never come back', async () => {
    const created = await call(gw, 'POST', '/v1/mcp-servers', {
      body: {
        slug: 'crm',
        url: 'http://127.0.0.1:9/mcp',
        description: 'CRM tools',
        allowed_tools: ['lookup'],
        timeout_ms: 5000,
        auth: { type: 'headers', headers: { 'X-Api-Token': 'very-secret-value' } },
      },
    });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      object: 'mcp_server',
      slug: 'crm',
      url: 'http://127.0.0.1:9/mcp',
      description: 'CRM tools',
      allowed_tools: ['lookup'],
      timeout_ms: 5000,
      auth: { type: 'headers', header_names: ['X-Api-Token'] },
    });
    expect(created.text).not.toContain('very-secret-value');

    const got = await call(gw, 'GET', '/v1/mcp-servers/crm');
    expect(got.status).toBe(200);
    expect(got.body.id).toBe(created.body.id);
    expect(got.text).not.toContain('very-secret-value');

    const second = await call(gw, 'POST', '/v1/mcp-servers', {
      body: {
        slug: 'billing',
        url: 'http://127.0.0.1:9/other',
        auth: { type: 'oauth_client_credentials', token_url: 'http://127.0.0.1:9/token', client_id: 'gw', client_secret: 'oauth-secret-value' },
      },
    });
    expect(second.status).toBe(200);
    expect(second.body.auth).toEqual({
      type: 'oauth_client_credentials',
      token_url: 'http://127.0.0.1:9/token',
      client_id: 'gw',
      scope: null,
      has_client_secret: true,
    });
    expect(second.body.timeout_ms).toBe(30000);
    expect(second.body.allowed_tools).toBeNull();
    expect(second.text).not.toContain('oauth-secret-value');

    const page1 = await call(gw, 'GET', '/v1/mcp-servers?limit=1');
    expect(page1.status).toBe(200);
    expect(page1.body.data.map((s: { slug: string }) => s.slug)).toEqual(['crm']);
    expect(page1.body.has_more).toBe(true);
    const page2 = await call(gw, 'GET', `/v1/mcp-servers?limit=1&after=${page1.body.last_id}`);
    expect(page2.body.data.map((s: { slug: string }) => s.slug)).toEqual(['billing']);
    expect(page2.body.has_more).toBe(false);
    expect(page1.text + page2.text).not.toMatch(/secret-value/);

    const patched = await call(gw, 'PATCH', '/v1/mcp-servers/crm', { body: { allowed_tools: null, auth: { type: 'none' } } });
    expect(patched.status).toBe(200);
    expect(patched.body.allowed_tools).toBeNull();
    expect(patched.body.auth).toEqual({ type: 'none' });
    expect(patched.body.timeout_ms).toBe(5000);

    const taken = await call(gw, 'POST', '/v1/mcp-servers', { body: { slug: 'crm', url: 'http://127.0.0.1:9/mcp' } });
    expect(taken.status).toBe(409);

    for (const slug of ['crm', 'billing']) {
      const deleted = await call(gw, 'DELETE', `/v1/mcp-servers/${slug}`);
      expect(deleted.status).toBe(200);
      expect(deleted.body).toMatchObject({ object: 'mcp_server.deleted', slug, deleted: true });
    }
    expect((await call(gw, 'GET', '/v1/mcp-servers/crm')).status).toBe(404);
    expect((await call(gw, 'DELETE', '/v1/mcp-servers/crm')).status).toBe(404);
  });

  it('refuses bad input with a 400 naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ slug: 'Bad Slug', url: 'http://127.0.0.1:9/' }, 'slug'],
      [{ slug: 'ok', url: 'ftp://127.0.0.1/' }, 'url'],
      [{ slug: 'ok', url: 'http://127.0.0.1:9/', timeout_ms: 10 }, 'timeout_ms'],
      [{ slug: 'ok', url: 'http://127.0.0.1:9/', allowed_tools: ['no spaces'] }, 'allowed_tools[0]'],
      [{ slug: 'ok', url: 'http://127.0.0.1:9/', auth: { type: 'headers', headers: { Host: 'x' } } }, 'auth.headers.Host'],
      [{ slug: 'ok', url: 'http://127.0.0.1:9/', auth: { type: 'oauth_client_credentials', client_id: 'a', client_secret: 'b' } }, 'auth.token_url'],
      [{ slug: 'ok', url: 'http://127.0.0.1:9/', auth: { type: 'magic' } }, 'auth.type'],
    ];
    for (const [body, param] of cases) {
      const res = await call(gw, 'POST', '/v1/mcp-servers', { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(errorOf(res).param, JSON.stringify(body)).toBe(param);
    }
  });

  it('applies the SSRF rules of custom hosts to url and token_url', async () => {
    const metadata = await call(gw, 'POST', '/v1/mcp-servers', { body: { slug: 'meta', url: 'http://169.254.169.254/latest' } });
    expect(metadata.status).toBe(400);
    expect(errorOf(metadata)).toMatchObject({ param: 'url', code: 'blocked_custom_host' });
    const privateToken = await call(gw, 'POST', '/v1/mcp-servers', {
      body: {
        slug: 'tok',
        url: 'http://127.0.0.1:9/',
        auth: { type: 'oauth_client_credentials', token_url: 'http://10.0.0.8/token', client_id: 'a', client_secret: 'b' },
      },
    });
    expect(privateToken.status).toBe(400);
    expect(errorOf(privateToken)).toMatchObject({ param: 'auth.token_url', code: 'blocked_custom_host' });
    const patch = await call(gw, 'PATCH', '/v1/mcp-servers/none-yet', { body: { url: 'http://192.168.1.1/' } });
    expect(patch.status).toBe(400);
  });

  it('lets concurrent updates either win or get a 409, never lose one silently', async () => {
    expect((await call(gw, 'POST', '/v1/mcp-servers', { body: { slug: 'raced', url: 'http://127.0.0.1:9/mcp' } })).status).toBe(200);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => call(gw, 'PATCH', '/v1/mcp-servers/raced', { body: { description: `writer ${i}` } })),
    );
    for (const r of results) expect([200, 409]).toContain(r.status);
    const winners = results.filter((r) => r.status === 200).map((r) => r.body.description as string);
    expect(winners.length).toBeGreaterThanOrEqual(1);
    const final = await call(gw, 'GET', '/v1/mcp-servers/raced');
    expect(winners).toContain(final.body.description);
    await call(gw, 'DELETE', '/v1/mcp-servers/raced');
  });

  it('keeps each workspace to its own servers and refuses gateway-only keys', async () => {
    const mine = await call(gw, 'POST', '/v1/mcp-servers', { body: { slug: 'isolated', url: 'http://127.0.0.1:9/mcp' } });
    expect(mine.status).toBe(200);
    expect((await call(gw, 'GET', '/v1/mcp-servers/isolated', { key: otherKey })).status).toBe(404);
    const theirs = await call(gw, 'GET', '/v1/mcp-servers', { key: otherKey });
    expect(theirs.body.data).toEqual([]);
    expect((await call(gw, 'DELETE', '/v1/mcp-servers/isolated', { key: otherKey })).status).toBe(404);
    const gatewayKey = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'gw only', scopes: ['gateway'] } });
    expect((await call(gw, 'GET', '/v1/mcp-servers', { key: gatewayKey.body.secret })).status).toBe(403);
    await call(gw, 'DELETE', '/v1/mcp-servers/isolated');
  });
});
