import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { call, errorOf, startTestGateway } from '../support/gateway';

/**
 * Roles (docs/api.md, "Roles and migration"): every route of docs/openapi.json against
 * every role, with and without the `gateway` scope, and a workspace admin of one workspace
 * against another's objects. The expectations below are written from the docs' table, not
 * read from the route tables.
 */

type Role = 'org-admin' | 'workspace-admin' | 'member' | 'viewer';
const ROLES: Role[] = ['org-admin', 'workspace-admin', 'member', 'viewer'];
const ADMINS: Role[] = ['org-admin', 'workspace-admin'];

/** Control-plane groups: reads for viewers and admins, writes for admins. */
const ADMIN_OBJECTS = ['/v1/api-keys', '/v1/providers', '/v1/configs', '/v1/guardrails', '/v1/policies/', '/v1/prices', '/v1/mcp-servers'];

/** THE rule table: whether a key of `role` (with or without `gateway`) may use `method path`. */
function allowed(method: string, path: string, role: Role, gateway: boolean): boolean {
  const read = method === 'GET';
  // A workspace admin lists and reads its own workspace only (the made-up id below is another's).
  if (path.startsWith('/v1/workspaces')) return path === '/v1/workspaces' && read ? ADMINS.includes(role) : role === 'org-admin';
  if (path.startsWith('/v1/logs') || path === '/v1/analytics/spend' || path === '/v1/openapi.json') return true;
  if (path.startsWith('/v1/prompts') && !path.endsWith('/render') && !path.endsWith('/completions')) {
    return read || ADMINS.includes(role);
  }
  if (ADMIN_OBJECTS.some((prefix) => path.startsWith(prefix))) return read ? role !== 'member' : ADMINS.includes(role);
  // Everything else is model traffic (the OpenAI-shaped APIs, dialects, the generic proxy).
  return gateway && role !== 'viewer';
}

interface Operation {
  method: string;
  /** As documented, `{params}` included. */
  path: string;
  /** With made-up ids: a 404 past the role check counts as allowed. */
  url: string;
}

function documentedOperations(): Operation[] {
  const doc = JSON.parse(readFileSync('docs/openapi.json', 'utf8')) as { paths: Record<string, Record<string, unknown>> };
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of Object.keys(item).filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))) {
      const url = path.replace('{proxy}', 'matrix/none').replace(/\{[^}]+\}/g, 'matrix-unknown-id');
      ops.push({ method: method.toUpperCase(), path, url });
    }
  }
  return ops;
}

async function inBatches<T>(items: T[], size: number, run: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(run));
}

let gw: LocalGateway;
/** A workspace other than the bootstrap one, and a key of each role and scope set in it. */
let teamWorkspace: string;
const keys = new Map<string, string>();
const keyName = (role: Role, gateway: boolean) => `${role}${gateway ? '+gateway' : ''}`;

async function createKey(body: Record<string, unknown>, key?: string): Promise<string> {
  const res = await call(gw, 'POST', '/v1/api-keys', { body, ...(key ? { key } : {}) });
  expect(res.status, res.text).toBe(200);
  return res.body.secret;
}

beforeAll(async () => {
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0' } });
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'Roles team' } });
  expect(ws.status).toBe(200);
  teamWorkspace = ws.body.id;
  for (const role of ROLES) {
    for (const gateway of [true, false]) {
      keys.set(
        keyName(role, gateway),
        await createKey({ name: keyName(role, gateway), workspace_id: teamWorkspace, role, scopes: gateway ? ['gateway'] : [] }),
      );
    }
  }
});
afterAll(async () => {
  await gw?.stop();
});

describe('the role matrix', () => {
  it('every documented route answers each role and scope set as the rule table says', async () => {
    const operations = documentedOperations();
    expect(operations.length).toBeGreaterThan(90);
    const cases = operations.flatMap((op) => ROLES.flatMap((role) => [true, false].map((gateway) => ({ op, role, gateway }))));
    const wrong: string[] = [];
    await inBatches(cases, 24, async ({ op, role, gateway }) => {
      const res = await call(gw, op.method, op.url, {
        key: keys.get(keyName(role, gateway))!,
        ...(op.method === 'POST' || op.method === 'PUT' ? { body: {} } : {}),
      });
      const expected = allowed(op.method, op.path, role, gateway);
      // Dialect routes answer in their API's error shape: the message is the same.
      const denied = res.status === 403 && (res.text.includes("this key's role is") || res.text.includes('which this key (role'));
      if (res.status === 401 || (res.status === 403 && !denied) || denied === expected) {
        wrong.push(
          `${op.method} ${op.path} as ${keyName(role, gateway)}: ${res.status} (expected ${expected ? 'allowed' : '403 insufficient_role'}) ${res.text.slice(0, 160)}`,
        );
      }
    });
    expect(wrong).toEqual([]);
  }, 60_000);

  it('a refusal names the roles the route is open to and the key role', async () => {
    const res = await call(gw, 'DELETE', '/v1/guardrails/anything', { key: keys.get('member+gateway')! });
    expect(res.status).toBe(403);
    const error = errorOf(res);
    expect(error).toMatchObject({ type: 'permission_error', code: 'insufficient_role' });
    expect(error.message).toContain('`workspace-admin`');
    expect(error.message).toContain("this key's role is `member`");
    const noScope = await call(gw, 'POST', '/v1/chat/completions', { key: keys.get('org-admin')!, body: {} });
    expect(noScope.status).toBe(403);
    expect(errorOf(noScope).message).toContain('`gateway` scope');
  });

  it('the bootstrap key is an org-admin with the gateway scope, and a key grants at most its own role', async () => {
    const self = await call(gw, 'GET', `/v1/api-keys`);
    expect(self.status).toBe(200);
    expect(self.body.data.find((k: { name: string }) => k.name === 'bootstrap admin')).toMatchObject({ role: 'org-admin', scopes: ['gateway'] });
    const wsAdmin = keys.get('workspace-admin')!;
    const escalate = await call(gw, 'POST', '/v1/api-keys', { key: wsAdmin, body: { name: 'up', role: 'org-admin' } });
    expect(escalate.status).toBe(403);
    expect(errorOf(escalate)).toMatchObject({ code: 'insufficient_role', param: 'role' });
    const orgAdminKeys = await call(gw, 'GET', `/v1/api-keys?workspace_id=${teamWorkspace}`);
    const orgAdminId = orgAdminKeys.body.data.find((k: { name: string }) => k.name === 'org-admin').id;
    const revoke = await call(gw, 'DELETE', `/v1/api-keys/${orgAdminId}`, { key: wsAdmin });
    expect(revoke.status).toBe(403);
    const member = await call(gw, 'POST', '/v1/api-keys', { key: wsAdmin, body: { name: 'member made by a workspace admin' } });
    expect(member.status).toBe(200);
    expect(member.body).toMatchObject({ role: 'member', scopes: ['gateway'], workspace_id: teamWorkspace });
  });

  it("a key's role is changed by an admin allowed to grant it", async () => {
    const wsAdmin = keys.get('workspace-admin')!;
    const made = await call(gw, 'POST', '/v1/api-keys', { key: wsAdmin, body: { name: 'to be promoted' } });
    expect(made.status, made.text).toBe(200);
    const path = `/v1/api-keys/${made.body.id}`;
    const toOrgAdmin = await call(gw, 'PUT', path, { key: wsAdmin, body: { role: 'org-admin' } });
    expect(toOrgAdmin.status).toBe(403);
    expect(errorOf(toOrgAdmin)).toMatchObject({ code: 'insufficient_role', param: 'role' });
    const bad = await call(gw, 'PUT', path, { key: wsAdmin, body: { role: 'admin' } });
    expect(bad.status).toBe(400);
    expect(errorOf(bad).param).toBe('role');

    const toAdmin = await call(gw, 'PUT', path, { key: wsAdmin, body: { role: 'workspace-admin' } });
    expect(toAdmin.status, toAdmin.text).toBe(200);
    expect(toAdmin.body).toMatchObject({ role: 'workspace-admin', name: 'to be promoted' });
    // The changed role applies to the key's next request (AUTH_CACHE_TTL_MS is 0 here).
    expect((await call(gw, 'GET', '/v1/guardrails', { key: made.body.secret })).status).toBe(200);

    const byOrgAdmin = await call(gw, 'PUT', `${path}?workspace_id=${teamWorkspace}`, { body: { role: 'viewer' } });
    expect(byOrgAdmin.status, byOrgAdmin.text).toBe(200);
    expect(byOrgAdmin.body.role).toBe('viewer');
    const asViewer = await call(gw, 'POST', '/v1/chat/completions', { key: made.body.secret, body: {} });
    expect(asViewer.status).toBe(403);
    expect((await call(gw, 'GET', '/v1/api-keys', { key: made.body.secret })).status).toBe(200);
  });

  it('the old admin scope asks for a workspace admin without gateway, and no longer implies gateway', async () => {
    const legacy = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'legacy admin', workspace_id: teamWorkspace, scopes: ['admin'] } });
    expect(legacy.status).toBe(200);
    expect(legacy.body).toMatchObject({ role: 'workspace-admin', scopes: [] });
    const model = await call(gw, 'POST', '/v1/chat/completions', { key: legacy.body.secret, body: {} });
    expect(model.status).toBe(403);
    const elsewhere = await call(gw, 'GET', `/v1/guardrails?workspace_id=${gw.workspaceId}`, { key: legacy.body.secret });
    expect(elsewhere.status).toBe(403);
  });
});

describe('a workspace admin of another workspace', () => {
  /** The bootstrap workspace's objects, made by its org-admin key. */
  const objects: Array<{ name: string; base: string; id: string; update: Record<string, unknown> }> = [];

  beforeAll(async () => {
    const create = async (name: string, base: string, body: Record<string, unknown>, update: Record<string, unknown>, idField = 'id') => {
      const res = await call(gw, 'POST', base, { body });
      expect(res.status, `${name}: ${res.text}`).toBe(200);
      objects.push({ name, base, id: res.body[idField], update });
    };
    await create(
      'guardrail',
      '/v1/guardrails',
      { name: 'A guard', checks: [{ id: 'default.contains', parameters: { words: ['x'], operator: 'none' } }], actions: { onFail: 'block' } },
      { name: 'taken' },
    );
    await create('rate-limit policy', '/v1/policies/rate-limits', { type: 'requests', unit: 'rpm', value: 10 }, { value: 1 });
    await create('budget', '/v1/policies/budgets', { type: 'budget', limit_usd: 5, period: 'day' }, { limit_usd: 1 });
    await create('key', '/v1/api-keys', { name: 'A member' }, { name: 'taken' });
    await create('config', '/v1/configs', { name: 'A routing', config: { provider: 'openai' } }, { name: 'taken' });
    await create(
      'provider',
      '/v1/providers',
      { slug: 'a-openai', provider: 'openai', api_key: 'sk-a', custom_host: 'http://127.0.0.1:9/v1' },
      { name: 'taken' },
      'slug',
    );
    await create(
      'prompt',
      '/v1/prompts',
      { name: 'A prompt', string: JSON.stringify([{ role: 'user', content: 'hi' }]), parameters: {}, model: 'gpt-4o-mini', virtual_key: 'a-openai' },
      { patch: true, string: JSON.stringify([{ role: 'user', content: 'taken' }]) },
    );
    await create('price override', '/v1/prices', { provider: 'openai', model: 'gpt-4o-mini', per_request: 0.5 }, { per_request: 9 });
  });

  const outsider = () => keys.get('workspace-admin+gateway')!;

  it("cannot read, change or delete A's objects by id, nor by naming A's workspace", async () => {
    const leaks: string[] = [];
    for (const { name, base, id, update } of objects) {
      for (const [method, suffix, body] of [
        ['GET', '', undefined],
        ['PUT', '', update],
        ['DELETE', '', undefined],
      ] as const) {
        const byId = await call(gw, method, `${base}/${id}${suffix}`, { key: outsider(), ...(body ? { body } : {}) });
        if (byId.status !== 404 && byId.status !== 403) leaks.push(`${method} ${name} by id: ${byId.status} ${byId.text.slice(0, 120)}`);
        if (byId.text.includes(id) && byId.status !== 404) leaks.push(`${method} ${name} by id leaks it`);
        for (const ref of [gw.workspaceId, 'default', 'no-such-workspace']) {
          const named = await call(gw, method, `${base}/${id}?workspace_id=${ref}`, { key: outsider(), ...(body ? { body } : {}) });
          if (named.status !== 403 || errorOf(named).code !== 'insufficient_role') leaks.push(`${method} ${name} ?workspace_id=${ref}: ${named.status}`);
        }
      }
      const list = await call(gw, 'GET', `${base}?workspace_id=${gw.workspaceId}`, { key: outsider() });
      if (list.status !== 403) leaks.push(`list ${name} of A: ${list.status}`);
    }
    for (const path of ['/v1/logs', '/v1/analytics/spend']) {
      const res = await call(gw, 'GET', `${path}?workspace_id=${gw.workspaceId}`, { key: outsider() });
      if (res.status !== 403) leaks.push(`${path} of A: ${res.status}`);
    }
    const logById = await call(gw, 'GET', '/v1/logs/log_unknown?workspace_id=default', { key: outsider() });
    if (logById.status !== 403) leaks.push(`a log of A: ${logById.status}`);
    expect(leaks).toEqual([]);
    // Everything is still there, unchanged.
    for (const { name, base, id } of objects) {
      const res = await call(gw, 'GET', `${base}/${id}`);
      expect(res.status, name).toBe(200);
      expect(res.text, name).not.toContain('taken');
    }
  });

  it('cannot create objects or keys in A by naming it in the body', async () => {
    for (const [path, body] of [
      ['/v1/api-keys', { name: 'planted', workspace_id: gw.workspaceId }],
      ['/v1/guardrails', { name: 'planted', workspace_id: 'default', checks: [], actions: { onFail: 'block' } }],
      ['/v1/policies/budgets', { type: 'budget', limit_usd: 1, period: 'day', workspace_id: gw.workspaceId }],
      ['/v1/prices', { provider: 'openai', model: 'planted', per_request: 1, workspace_id: gw.workspaceId }],
    ] as const) {
      const res = await call(gw, 'POST', path, { key: outsider(), body });
      expect(res.status, path).toBe(403);
      expect(errorOf(res)).toMatchObject({ code: 'insufficient_role', param: 'workspace_id' });
    }
    const keysOfA = await call(gw, 'GET', '/v1/api-keys');
    expect(keysOfA.body.data.map((k: { name: string }) => k.name)).not.toContain('planted');
  });

  it('can still manage its own workspace, naming it by id or slug', async () => {
    const own = await call(gw, 'GET', `/v1/guardrails?workspace_id=${teamWorkspace}`, { key: outsider() });
    expect(own.status).toBe(200);
    const created = await call(gw, 'POST', '/v1/configs', { key: outsider(), body: { name: 'B routing', config: { provider: 'openai' } } });
    expect(created.status).toBe(200);
    expect(created.body.workspace_id ?? teamWorkspace).toBe(teamWorkspace);
  });
});

describe('keys made before roles (no stored role; the old admin scope)', () => {
  /** Make a key, then store it as a key from before roles was: no `role`, these scopes. */
  async function legacyKey(workspaceId: string, scopes: string[]): Promise<string> {
    const secret = await createKey({ name: `legacy ${scopes.join('+')}`, workspace_id: workspaceId, role: 'workspace-admin' });
    const client = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1', endpoint: process.env.AWS_ENDPOINT_URL_DYNAMODB }));
    await client.send(
      new UpdateCommand({
        TableName: process.env.TABLE_CONTROL,
        Key: { pk: `KEY#${createHash('sha256').update(secret).digest('hex')}`, sk: 'KEY' },
        UpdateExpression: 'REMOVE #role SET scopes = :scopes',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#role': 'role' },
        ExpressionAttributeValues: { ':scopes': scopes },
      }),
    );
    client.destroy();
    return secret;
  }

  it('an admin key of the bootstrap workspace is an org-admin; elsewhere a workspace admin; without admin a member', async () => {
    const bootstrapAdmin = await legacyKey(gw.workspaceId, ['admin']);
    const teamAdmin = await legacyKey(teamWorkspace, ['admin', 'gateway']);
    const gatewayOnly = await legacyKey(teamWorkspace, ['gateway']);

    expect((await call(gw, 'GET', `/v1/guardrails?workspace_id=${teamWorkspace}`, { key: bootstrapAdmin })).status).toBe(200);
    expect((await call(gw, 'GET', '/v1/workspaces', { key: bootstrapAdmin })).status).toBe(200);
    // admin no longer implies gateway.
    expect((await call(gw, 'POST', '/v1/chat/completions', { key: bootstrapAdmin, body: {} })).status).toBe(403);

    const crossing = await call(gw, 'DELETE', `/v1/guardrails/anything?workspace_id=${gw.workspaceId}`, { key: teamAdmin });
    expect(crossing.status).toBe(403);
    expect(errorOf(crossing)).toMatchObject({ code: 'insufficient_role', param: 'workspace_id' });
    const own = await call(gw, 'GET', '/v1/workspaces', { key: teamAdmin });
    expect(own.status).toBe(200);
    expect(own.body.data.map((w: { id: string }) => w.id)).toEqual([teamWorkspace]);
    expect((await call(gw, 'GET', `/v1/workspaces/${teamWorkspace}`, { key: teamAdmin })).status).toBe(200);
    const other = await call(gw, 'GET', `/v1/workspaces/${gw.workspaceId}`, { key: teamAdmin });
    expect(other.status).toBe(403);
    expect(errorOf(other)).toMatchObject({ code: 'insufficient_role', param: 'id' });
    expect((await call(gw, 'GET', '/v1/guardrails', { key: teamAdmin })).status).toBe(200);
    expect((await call(gw, 'POST', '/v1/chat/completions', { key: teamAdmin, body: {} })).status).toBe(400);

    expect((await call(gw, 'GET', '/v1/guardrails', { key: gatewayOnly })).status).toBe(403);
    expect((await call(gw, 'GET', '/v1/logs', { key: gatewayOnly })).status).toBe(200);

    const listed = await call(gw, 'GET', `/v1/api-keys?workspace_id=${teamWorkspace}`);
    const roleOf = (name: string) => listed.body.data.find((k: { name: string }) => k.name === name);
    expect(roleOf('legacy admin+gateway')).toMatchObject({ role: 'workspace-admin', scopes: ['gateway'] });
    expect(roleOf('legacy gateway')).toMatchObject({ role: 'member', scopes: ['gateway'] });
  });
});
