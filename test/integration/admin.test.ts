import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { call, errorOf, startTestGateway } from '../support/gateway';

// Config is parsed once per process: no functions/ module is imported statically here,
// so the gateway's env (auth cache off, revocation immediate) is in place first.
let gw: LocalGateway;
/** An admin key and a workspace of the same organisation, other than the bootstrap one. */
let other: { workspaceId: string; key: string };

beforeAll(async () => {
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0' } });
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'Other team' } });
  expect(ws.status).toBe(200);
  const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'other admin', workspace_id: ws.body.id, scopes: ['admin', 'gateway'] } });
  expect(key.status).toBe(200);
  other = { workspaceId: ws.body.id, key: key.body.secret };
});
afterAll(async () => {
  await gw?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function scanControlTable(): Promise<Record<string, unknown>[]> {
  const client = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1', endpoint: process.env.AWS_ENDPOINT_URL_DYNAMODB }));
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await client.send(new ScanCommand({ TableName: process.env.TABLE_CONTROL, ExclusiveStartKey: start }));
    items.push(...((out.Items ?? []) as Record<string, unknown>[]));
    start = out.LastEvaluatedKey;
  } while (start);
  client.destroy();
  return items;
}

describe('api keys: authentication', () => {
  it('401 for a missing, unknown or malformed key on every admin resource', async () => {
    for (const path of ['/v1/api-keys', '/v1/providers', '/v1/configs']) {
      const missing = await call(gw, 'GET', path, { key: null });
      expect(missing.status, path).toBe(401);
      expect(errorOf(missing)).toMatchObject({ type: 'authentication_error', code: 'missing_api_key' });
      const unknown = await call(gw, 'GET', path, { key: 'gwk_unknown' });
      expect(unknown.status, path).toBe(401);
      expect(errorOf(unknown)).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
    }
  });

  it('creates a key, shows its secret once and only its record afterwards', async () => {
    const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'ci' } });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      object: 'api_key',
      name: 'ci',
      workspace_id: gw.workspaceId,
      organisation_id: gw.organisationId,
      scopes: ['gateway'],
      status: 'active',
      expires_at: null,
      revoked_at: null,
    });
    expect(created.body.id).toMatch(/^key_[0-9a-z]{26}$/);
    const secret: string = created.body.secret;
    expect(secret).toMatch(/^gwk_/);

    const one = await call(gw, 'GET', `/v1/api-keys/${created.body.id}`);
    expect(one.status).toBe(200);
    const { secret: _omitted, ...record } = created.body;
    expect(one.body).toEqual(record);
    const list = await call(gw, 'GET', '/v1/api-keys?limit=100');
    expect(list.body).toMatchObject({ object: 'list', has_more: false });
    expect(list.body.data.map((k: { id: string }) => k.id)).toContain(created.body.id);
    for (const text of [one.text, list.text]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain('"secret"');
    }
    // Only the hash is stored.
    expect(JSON.stringify(await scanControlTable())).not.toContain(secret);
  });

  it('403 insufficient_role for a member (gateway) key on admin routes', async () => {
    const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'data plane', scopes: ['gateway'] } });
    for (const [method, path] of [
      ['GET', '/v1/api-keys'],
      ['POST', '/v1/api-keys'],
      ['GET', '/v1/providers'],
      ['GET', '/v1/configs'],
      ['DELETE', `/v1/api-keys/${created.body.id}`],
    ] as const) {
      const res = await call(gw, method, path, { key: created.body.secret, body: method === 'POST' ? { name: 'x' } : undefined });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(errorOf(res)).toMatchObject({ type: 'permission_error', code: 'insufficient_role' });
    }
  });

  it('revocation takes effect on the next request (AUTH_CACHE_TTL_MS=0)', async () => {
    const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'to revoke', scopes: ['admin'] } });
    expect((await call(gw, 'GET', '/v1/configs', { key: created.body.secret })).status).toBe(200);
    const revoked = await call(gw, 'DELETE', `/v1/api-keys/${created.body.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: created.body.id, status: 'revoked' });
    expect(revoked.body.revoked_at).toBeGreaterThanOrEqual(created.body.created_at);
    expect(revoked.body.secret).toBeUndefined();
    const denied = await call(gw, 'GET', '/v1/configs', { key: created.body.secret });
    expect(denied.status).toBe(401);
    expect(errorOf(denied)).toMatchObject({ type: 'authentication_error', code: 'revoked_api_key' });
    // Revoking again changes nothing.
    const again = await call(gw, 'DELETE', `/v1/api-keys/${created.body.id}`);
    expect(again.body).toEqual(revoked.body);
    expect((await call(gw, 'GET', `/v1/api-keys/${created.body.id}`)).body.status).toBe('revoked');
  });

  it('401 once a key has expired', async () => {
    const expiresAt = Math.floor(Date.now() / 1000) + 2;
    const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'short', scopes: ['admin'], expires_at: expiresAt } });
    expect(created.status).toBe(200);
    expect(created.body.expires_at).toBe(expiresAt);
    // At least one second of validity remains here.
    expect((await call(gw, 'GET', '/v1/configs', { key: created.body.secret })).status).toBe(200);
    await sleep(expiresAt * 1000 - Date.now() + 50);
    const expired = await call(gw, 'GET', '/v1/configs', { key: created.body.secret });
    expect(expired.status).toBe(401);
    expect(errorOf(expired)).toMatchObject({ type: 'authentication_error', code: 'expired_api_key' });
  });

  it('creates keys for another workspace of the organisation and lists them with ?workspace_id=', async () => {
    const own = await call(gw, 'GET', '/v1/api-keys?limit=100', { key: other.key });
    expect(own.status).toBe(200);
    expect(own.body.data.every((k: { workspace_id: string }) => k.workspace_id === other.workspaceId)).toBe(true);
    expect(own.body.data).toHaveLength(1);
    const fromDefault = await call(gw, 'GET', `/v1/api-keys?workspace_id=${other.workspaceId}`);
    expect(fromDefault.body.data.map((k: { id: string }) => k.id)).toEqual(own.body.data.map((k: { id: string }) => k.id));
  });

  it('404 for a workspace of another organisation, or an unknown one', async () => {
    const { createOrganisation, createWorkspace } = await import('../../functions/shared/stores/workspaces');
    const org = await createOrganisation('Someone else');
    const foreign = await createWorkspace({ organisationId: org.id, name: 'Theirs' });
    for (const workspaceId of [foreign.id, 'no-such-workspace']) {
      const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'sneaky', workspace_id: workspaceId, scopes: ['admin'] } });
      expect(created.status).toBe(404);
      expect(errorOf(created)).toMatchObject({ type: 'not_found_error', param: 'workspace_id' });
      const listed = await call(gw, 'GET', `/v1/api-keys?workspace_id=${workspaceId}`);
      expect(listed.status).toBe(404);
    }
  });

  it('400s naming the field', async () => {
    const now = Math.floor(Date.now() / 1000);
    const cases: Array<[unknown, string]> = [
      [{}, 'name'],
      [{ name: '' }, 'name'],
      [{ name: 'x', scopes: ['root'] }, 'scopes[0]'],
      [{ name: 'x', scopes: ['gateway', 'gateway', 'gateway'] }, 'scopes'],
      [{ name: 'x', role: 'root' }, 'role'],
      [{ name: 'x', role: 'viewer', scopes: ['admin'] }, 'scopes'],
      [{ name: 'x', expires_at: now - 10 }, 'expires_at'],
      [{ name: 'x', expires_at: now }, 'expires_at'],
      [{ name: 'x', expires_at: 'tomorrow' }, 'expires_at'],
      [{ name: 'x', expires_at: Date.now() + 60_000 }, 'expires_at'],
      [{ name: 'x', workspace_id: 7 }, 'workspace_id'],
      [{ name: 'x', secret: 'mine' }, 'secret'],
    ];
    for (const [body, param] of cases) {
      const res = await call(gw, 'POST', '/v1/api-keys', { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      const err = errorOf(res);
      expect(err.type).toBe('invalid_request_error');
      expect(err.param, JSON.stringify(body)).toBe(param);
      expect(err.message).toContain(param.replace(/\[\d+\]$/, ''));
    }
  });
});

describe('managed providers', () => {
  const apiKey = 'sk-test-PLAINTEXT-provider-key-0001';
  const awsSecret = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLAINTEXT';
  const awsKeyId = 'plaintext-aws-key-id-0001'; // fake, and not shaped like a real key

  it('creates, reads, lists, updates and deletes without ever returning a credential', async () => {
    const created = await call(gw, 'POST', '/v1/providers', {
      body: { slug: 'openai-prod', provider: 'openai', name: 'OpenAI prod', api_key: apiKey, custom_host: 'https://llm.example.com/v1' },
    });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      object: 'provider',
      slug: 'openai-prod',
      provider: 'openai',
      name: 'OpenAI prod',
      workspace_id: gw.workspaceId,
      custom_host: 'https://llm.example.com/v1',
      azure_resource_name: null,
      has_api_key: true,
      has_aws_credentials: false,
    });
    const read = await call(gw, 'GET', '/v1/providers/openai-prod');
    expect(read.body).toEqual(created.body);
    const list = await call(gw, 'GET', '/v1/providers');
    expect(list.body).toMatchObject({ object: 'list', has_more: false, first_id: created.body.id });
    expect(list.body.data.map((p: { slug: string }) => p.slug)).toContain('openai-prod');

    const updated = await call(gw, 'PUT', '/v1/providers/openai-prod', { body: { name: 'Renamed', custom_host: null } });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ name: 'Renamed', custom_host: null, has_api_key: true });
    expect(updated.body.updated_at).toBeGreaterThanOrEqual(created.body.updated_at);
    const cleared = await call(gw, 'PUT', '/v1/providers/openai-prod', { body: { api_key: null } });
    expect(cleared.body.has_api_key).toBe(false);

    for (const res of [created, read, list, updated, cleared]) expect(res.text).not.toContain(apiKey);

    const deleted = await call(gw, 'DELETE', '/v1/providers/openai-prod');
    expect(deleted.body).toEqual({ object: 'provider.deleted', id: created.body.id, slug: 'openai-prod', deleted: true });
    expect((await call(gw, 'GET', '/v1/providers/openai-prod')).status).toBe(404);
    expect((await call(gw, 'DELETE', '/v1/providers/openai-prod')).status).toBe(404);
    expect((await call(gw, 'PUT', '/v1/providers/openai-prod', { body: { name: 'x' } })).status).toBe(404);
  });

  it('stores credentials envelope-encrypted, never in plaintext', async () => {
    const created = await call(gw, 'POST', '/v1/providers', {
      body: {
        slug: 'bedrock-main',
        provider: 'bedrock',
        aws_access_key_id: awsKeyId,
        aws_secret_access_key: awsSecret,
        aws_session_token: 'PLAINTEXT-session-token',
        aws_region: 'eu-west-1',
        api_key: apiKey,
      },
    });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ has_aws_credentials: true, has_aws_session_token: true, has_api_key: true, aws_region: 'eu-west-1' });
    for (const plain of [awsKeyId, awsSecret, apiKey, 'PLAINTEXT']) expect(created.text).not.toContain(plain);

    const items = await scanControlTable();
    const stored = items.find((i) => i.slug === 'bedrock-main' && i.workspace_id === gw.workspaceId);
    expect(stored, 'provider item found by a direct table scan').toBeDefined();
    expect(stored!.secrets).toMatchObject({ alg: 'AES-256-GCM' });
    const json = JSON.stringify(items);
    for (const plain of [awsKeyId, awsSecret, apiKey, 'PLAINTEXT']) expect(json).not.toContain(plain);
  });

  it('resolveManagedProvider decrypts for the data plane, serves the warm path from cache, and sees local updates', async () => {
    const { resolveManagedProvider } = await import('../../functions/shared/stores/providers');
    const { storageCalls } = await import('../../functions/shared/db/client');
    await call(gw, 'POST', '/v1/providers', { body: { slug: 'anthropic-a', provider: 'anthropic', api_key: apiKey } });

    const first = await resolveManagedProvider(gw.workspaceId, 'anthropic-a');
    expect(first).toMatchObject({ slug: 'anthropic-a', provider: 'anthropic', secrets: { api_key: apiKey } });
    const before = { ...storageCalls };
    const second = await resolveManagedProvider(gw.workspaceId, 'anthropic-a');
    expect(second).toBe(first);
    expect(storageCalls).toEqual(before);

    await call(gw, 'PUT', '/v1/providers/anthropic-a', { body: { api_key: 'sk-rotated' } });
    expect((await resolveManagedProvider(gw.workspaceId, 'anthropic-a'))?.secrets).toEqual({ api_key: 'sk-rotated' });
    await call(gw, 'DELETE', '/v1/providers/anthropic-a');
    expect(await resolveManagedProvider(gw.workspaceId, 'anthropic-a')).toBeUndefined();
    // Another workspace's slug is not visible.
    await call(gw, 'POST', '/v1/providers', { body: { slug: 'anthropic-b', provider: 'anthropic', api_key: apiKey } });
    expect(await resolveManagedProvider(other.workspaceId, 'anthropic-b')).toBeUndefined();
    // Whatever a caller puts in `@slug` is a miss, never a storage error.
    for (const slug of ['x'.repeat(3000), 'Ünïcode', '']) expect(await resolveManagedProvider(gw.workspaceId, slug)).toBeUndefined();
  });

  it('accepts every listed provider and a slug that another workspace also uses', async () => {
    const { PROVIDER_SLUGS } = await import('../../functions/shared/provider-table');
    for (const provider of ['openai', 'azure-openai', 'vertex-ai', 'mistral-ai', 'ollama', 'pinecone']) {
      expect(PROVIDER_SLUGS).toContain(provider);
    }
    const mine = await call(gw, 'POST', '/v1/providers', {
      body: {
        slug: 'shared-slug',
        provider: 'azure-openai',
        azure_resource_name: 'res',
        azure_deployment_id: 'dep',
        azure_api_version: '2024-10-21',
        api_key: 'k',
      },
    });
    expect(mine.status).toBe(200);
    expect(mine.body).toMatchObject({ azure_resource_name: 'res', azure_deployment_id: 'dep', azure_api_version: '2024-10-21' });
    const theirs = await call(gw, 'POST', '/v1/providers', {
      key: other.key,
      body: { slug: 'shared-slug', provider: 'vertex-ai', vertex_project_id: 'p', vertex_region: 'us-central1' },
    });
    expect(theirs.status).toBe(200);
    expect(theirs.body.workspace_id).toBe(other.workspaceId);
    const dup = await call(gw, 'POST', '/v1/providers', { body: { slug: 'shared-slug', provider: 'openai' } });
    expect(dup.status).toBe(409);
    expect(errorOf(dup)).toMatchObject({ type: 'conflict_error', code: 'slug_taken' });
  });

  it('400s naming the field', async () => {
    const cases: Array<[unknown, string]> = [
      [{ provider: 'openai' }, 'slug'],
      [{ slug: 'Bad Slug', provider: 'openai' }, 'slug'],
      [{ slug: 'ok', provider: 'not-a-provider' }, 'provider'],
      [{ slug: 'ok', provider: 'openai', custom_host: 'ftp://example.com' }, 'custom_host'],
      [{ slug: 'ok', provider: 'openai', custom_host: 'https://user:pw@example.com' }, 'custom_host'],
      [{ slug: 'ok', provider: 'openai', api_key: '' }, 'api_key'],
      [{ slug: 'ok', provider: 'openai', api_key: 42 }, 'api_key'],
      [{ slug: 'ok', provider: 'bedrock', aws_access_key_id: 'AKIA' }, 'aws_secret_access_key'],
      [{ slug: 'ok', provider: 'bedrock', aws_secret_access_key: 's' }, 'aws_access_key_id'],
      [{ slug: 'ok', provider: 'bedrock', aws_session_token: 't' }, 'aws_session_token'],
      [{ slug: 'ok', provider: 'openai', colour: 'red' }, 'colour'],
    ];
    for (const [body, param] of cases) {
      const res = await call(gw, 'POST', '/v1/providers', { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      const err = errorOf(res);
      expect(err.param, JSON.stringify(body)).toBe(param);
      expect(err.message).toContain(param);
    }
    expect((await call(gw, 'GET', '/v1/providers/ok')).status).toBe(404);
    await call(gw, 'POST', '/v1/providers', { body: { slug: 'bedrock-put', provider: 'bedrock', aws_access_key_id: 'A', aws_secret_access_key: 'S' } });
    const broken = await call(gw, 'PUT', '/v1/providers/bedrock-put', { body: { aws_secret_access_key: null } });
    expect(broken.status).toBe(400);
    expect(errorOf(broken).param).toBe('aws_secret_access_key');
    const slugChange = await call(gw, 'PUT', '/v1/providers/bedrock-put', { body: { slug: 'renamed' } });
    expect(slugChange.status).toBe(400);
    expect(errorOf(slugChange).message).toContain('slug');
  });
});

describe('saved configs', () => {
  const routing = { retry: { attempts: 2 }, targets: [{ provider: '@openai-prod' }], override_params: { deep: [1, 2.5, 'x', null, true] } };

  it('creates with a pc- id, reads by id or slug, lists, updates and deletes', async () => {
    const created = await call(gw, 'POST', '/v1/configs', { body: { name: 'Prod routing', slug: 'prod-routing', config: routing } });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ object: 'config', slug: 'prod-routing', name: 'Prod routing', config: routing });
    expect(created.body.id).toMatch(/^pc-[0-9a-z]{26}$/);
    expect(typeof created.body.created_at).toBe('number');
    expect(created.body.updated_at).toBe(created.body.created_at);

    expect((await call(gw, 'GET', `/v1/configs/${created.body.id}`)).body).toEqual(created.body);
    expect((await call(gw, 'GET', '/v1/configs/prod-routing')).body).toEqual(created.body);

    const second = await call(gw, 'POST', '/v1/configs', { body: { name: 'Prod routing', config: { provider: 'openai' } } });
    expect(second.status).toBe(200);
    expect(second.body.slug).toMatch(/^prod-routing-[0-9a-z]{6}$/);
    const third = await call(gw, 'POST', '/v1/configs', { body: { name: 'Fallbacks!', config: { provider: 'openai' } } });
    expect(third.body.slug).toBe('fallbacks');

    const page1 = await call(gw, 'GET', '/v1/configs?limit=2');
    expect(page1.body).toMatchObject({ object: 'list', has_more: true });
    const page2 = await call(gw, 'GET', `/v1/configs?limit=2&after=${page1.body.last_id}`);
    const ids = [...page1.body.data, ...page2.body.data].map((c: { id: string }) => c.id);
    expect(ids).toEqual([created.body.id, second.body.id, third.body.id]);

    const updated = await call(gw, 'PUT', '/v1/configs/prod-routing', { body: { config: { provider: 'openai', cache: { mode: 'simple' } } } });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ id: created.body.id, name: 'Prod routing', config: { provider: 'openai', cache: { mode: 'simple' } } });
    const renamed = await call(gw, 'PUT', `/v1/configs/${created.body.id}`, { body: { name: 'Renamed' } });
    expect(renamed.body).toMatchObject({ name: 'Renamed', slug: 'prod-routing', config: { provider: 'openai', cache: { mode: 'simple' } } });

    const deleted = await call(gw, 'DELETE', '/v1/configs/prod-routing');
    expect(deleted.body).toEqual({ object: 'config.deleted', id: created.body.id, slug: 'prod-routing', deleted: true });
    expect((await call(gw, 'GET', `/v1/configs/${created.body.id}`)).status).toBe(404);
    expect((await call(gw, 'GET', '/v1/configs/prod-routing')).status).toBe(404);
    // The slug is free again.
    expect((await call(gw, 'POST', '/v1/configs', { body: { name: 'again', slug: 'prod-routing', config: { provider: 'openai' } } })).status).toBe(200);
  });

  it('400 naming the path for an unknown condition operator or field, saved or inline', async () => {
    const conditional = (query: Record<string, unknown>) => ({
      strategy: { mode: 'conditional', conditions: [{ query, then: 'paid' }], default: 'free' },
      targets: [
        { name: 'paid', provider: 'openai' },
        { name: 'free', provider: 'openai' },
      ],
    });
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [conditional({ 'metadata.plan': { $equals: 'paid' } }), 'config.strategy.conditions[0].query.metadata.plan.$equals', '$equals'],
      [
        conditional({ $or: [{ 'metadata.plan': { $eq: 'a' } }, { 'params.model': { $regexp: 'x' } }] }),
        'config.strategy.conditions[0].query.$or[1].params.model.$regexp',
        '$regexp',
      ],
      [conditional({ $xor: [] }), 'config.strategy.conditions[0].query.$xor', '$xor'],
      [conditional({ 'metadata.plan': { $in: 'paid' } }), 'config.strategy.conditions[0].query.metadata.plan.$in', '$in'],
      [
        { ...conditional({ 'metadata.plan': 'paid' }), strategy: { mode: 'conditional', conditions: [{ query: {}, then: 'paid', else: 'free' }] } },
        'config.strategy.conditions[0]',
        'else',
      ],
    ];
    for (const [config, param, named] of cases) {
      const saved = await call(gw, 'POST', '/v1/configs', { body: { name: 'typo', config } });
      expect(saved.status, JSON.stringify(config)).toBe(400);
      expect(errorOf(saved).param).toBe(param);
      expect(errorOf(saved).message).toContain(named);
    }
    const unknownOp = conditional({ 'metadata.plan': { $equals: 'paid' } });
    expect(errorOf(await call(gw, 'POST', '/v1/configs', { body: { name: 'typo', config: unknownOp } })).message).toContain('$eq, $ne');

    const good = await call(gw, 'POST', '/v1/configs', {
      body: { name: 'conditional', config: conditional({ 'metadata.plan': { $eq: 'paid' }, 'params.n': 2, $and: [{ 'metadata.tier': { $in: ['a'] } }] }) },
    });
    expect(good.status).toBe(200);
    const update = await call(gw, 'PUT', `/v1/configs/${good.body.id}`, { body: { config: unknownOp } });
    expect(update.status).toBe(400);
    expect(errorOf(update).param).toBe('config.strategy.conditions[0].query.metadata.plan.$equals');

    const inline = await call(gw, 'POST', '/v1/chat/completions', {
      headers: { 'x-gateway-config': JSON.stringify(unknownOp) },
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(inline.status).toBe(400);
    expect(errorOf(inline).param).toBe('x-gateway-config.strategy.conditions[0].query.metadata.plan.$equals');
    expect(errorOf(inline).message).toContain('$equals');
  });

  it('override_params: what the gateway reads keeps its request shape, and `stream` stays the caller’s; 400 naming the path, saved or inline', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ stream: true }, 'config.targets[0].override_params.stream'],
      [{ model: 7 }, 'config.targets[0].override_params.model'],
      [{ messages: 'hi' }, 'config.targets[0].override_params.messages'],
      [{ messages: [{ role: 'user' }] }, 'config.targets[0].override_params.messages[0].content'],
      [{ tools: { type: 'function' } }, 'config.targets[0].override_params.tools'],
      [{ tool_choice: { type: 'function' } }, 'config.targets[0].override_params.tool_choice.function'],
      [{ input: { text: 'x' } }, 'config.targets[0].override_params.input'],
    ];
    for (const [override_params, param] of cases) {
      const config = { targets: [{ provider: 'openai', override_params }] };
      const saved = await call(gw, 'POST', '/v1/configs', { body: { name: 'overrides', config } });
      expect(saved.status, JSON.stringify(override_params)).toBe(400);
      expect(errorOf(saved).param).toBe(param);
      const inline = await call(gw, 'POST', '/v1/chat/completions', {
        headers: { 'x-gateway-config': JSON.stringify(config) },
        body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
      });
      expect(inline.status).toBe(400);
      expect(errorOf(inline).param).toBe(param.replace(/^config/, 'x-gateway-config'));
    }
    expect(
      errorOf(await call(gw, 'POST', '/v1/configs', { body: { name: 'overrides', config: { provider: 'openai', override_params: { stream: false } } } }))
        .message,
    ).toContain('caller');
    // Parameters the gateway does not read are the provider's to judge, in any shape.
    const free = {
      provider: 'openai',
      override_params: { model: 'gpt-4o', temperature: 0.2, max_tokens: 64, messages: [{ role: 'system', content: 'be brief' }], vendor_flag: { a: [1] } },
    };
    expect((await call(gw, 'POST', '/v1/configs', { body: { name: 'overrides', config: free } })).status).toBe(200);
  });

  it('an empty list answers first_id and last_id null (as OpenAI), and the SDK pages through it', async () => {
    const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'Empty lists' } });
    const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'empty admin', workspace_id: ws.body.id, scopes: ['admin'] } });
    const empty = await call(gw, 'GET', '/v1/configs', { key: key.body.secret });
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ object: 'list', data: [], first_id: null, last_id: null, has_more: false });
    const { default: OpenAI } = await import('openai');
    const { CursorPage } = await import('openai/pagination');
    const client = new OpenAI({ apiKey: 'unused', baseURL: `${gw.url}/v1`, maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': key.body.secret } });
    const seen: unknown[] = [];
    for await (const c of client.getAPIList('/configs', CursorPage<{ id: string }>)) seen.push(c);
    expect(seen).toEqual([]);
  });

  it('409 for a slug that is taken', async () => {
    await call(gw, 'POST', '/v1/configs', { body: { name: 'a', slug: 'taken', config: { provider: 'openai' } } });
    const dup = await call(gw, 'POST', '/v1/configs', { body: { name: 'b', slug: 'taken', config: { provider: 'openai' } } });
    expect(dup.status).toBe(409);
    expect(errorOf(dup)).toMatchObject({ type: 'conflict_error', code: 'slug_taken' });
  });

  it('resolveSavedConfig serves the warm path from cache and sees local updates', async () => {
    const { resolveSavedConfig } = await import('../../functions/shared/stores/configs');
    const { storageCalls } = await import('../../functions/shared/db/client');
    const created = await call(gw, 'POST', '/v1/configs', { body: { name: 'cached', config: { provider: '@v1' } } });
    const byId = await resolveSavedConfig(gw.workspaceId, created.body.id);
    const bySlug = await resolveSavedConfig(gw.workspaceId, 'cached');
    expect(byId?.config).toEqual({ provider: '@v1' });
    expect(bySlug?.id).toBe(created.body.id);
    const before = { ...storageCalls };
    expect(await resolveSavedConfig(gw.workspaceId, created.body.id)).toBe(byId);
    expect(await resolveSavedConfig(gw.workspaceId, 'cached')).toBe(bySlug);
    expect(storageCalls).toEqual(before);
    await call(gw, 'PUT', '/v1/configs/cached', { body: { config: { provider: '@v2' } } });
    expect((await resolveSavedConfig(gw.workspaceId, created.body.id))?.config).toEqual({ provider: '@v2' });
    expect((await resolveSavedConfig(gw.workspaceId, 'cached'))?.config).toEqual({ provider: '@v2' });
    await call(gw, 'DELETE', `/v1/configs/${created.body.id}`);
    expect(await resolveSavedConfig(gw.workspaceId, 'cached')).toBeUndefined();
    expect(await resolveSavedConfig(other.workspaceId, created.body.id)).toBeUndefined();
    for (const ref of ['x'.repeat(3000), `pc-${'y'.repeat(3000)}`, '']) expect(await resolveSavedConfig(gw.workspaceId, ref)).toBeUndefined();
  });

  it('400s naming the field', async () => {
    const big = { blob: 'x'.repeat(64 * 1024) };
    const cases: Array<[unknown, string]> = [
      [{ config: { provider: 'openai' } }, 'name'],
      [{ name: 'x' }, 'config'],
      [{ name: 'x', config: [] }, 'config'],
      [{ name: 'x', config: 'pc-abc' }, 'config'],
      [{ name: 'x', config: null }, 'config'],
      [{ name: 'x', config: big }, 'config'],
      [{ name: 'x', slug: 'Not OK', config: { provider: 'openai' } }, 'slug'],
      [{ name: 'x', slug: 'pc-looks-like-an-id', config: { provider: 'openai' } }, 'slug'],
      [
        { name: 'x', config: { strategy: { mode: 'fallback' }, targets: [{ provider: 'openai', retry: { attempts: 9 } }] } },
        'config.targets[0].retry.attempts',
      ],
    ];
    for (const [body, param] of cases) {
      const res = await call(gw, 'POST', '/v1/configs', { body });
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      const err = errorOf(res);
      expect(err.param).toBe(param);
      expect(err.message).toContain(`\`${param}\``);
    }
    await call(gw, 'POST', '/v1/configs', { body: { name: 'upd', slug: 'upd', config: { provider: 'openai' } } });
    const empty = await call(gw, 'PUT', '/v1/configs/upd', { body: {} });
    expect(empty.status).toBe(400);
    const badConfig = await call(gw, 'PUT', '/v1/configs/upd', { body: { config: [1] } });
    expect(badConfig.status).toBe(400);
    expect(errorOf(badConfig).param).toBe('config');
  });
});

describe('workspace isolation: another workspace gets 404, never 403', () => {
  it('keys, providers and configs of one workspace are invisible to another', async () => {
    const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'mine' } });
    await call(gw, 'POST', '/v1/providers', { body: { slug: 'private-openai', provider: 'openai', api_key: 'sk-x' } });
    const config = await call(gw, 'POST', '/v1/configs', { body: { name: 'Private', slug: 'private-config', config: { provider: '@a1' } } });

    const attempts: Array<[string, string, unknown?]> = [
      ['GET', `/v1/api-keys/${key.body.id}`],
      ['DELETE', `/v1/api-keys/${key.body.id}`],
      ['GET', '/v1/providers/private-openai'],
      ['PUT', '/v1/providers/private-openai', { name: 'mine now' }],
      ['DELETE', '/v1/providers/private-openai'],
      ['GET', `/v1/configs/${config.body.id}`],
      ['GET', '/v1/configs/private-config'],
      ['PUT', `/v1/configs/${config.body.id}`, { name: 'mine now' }],
      ['DELETE', '/v1/configs/private-config'],
    ];
    for (const [method, path, body] of attempts) {
      const res = await call(gw, method, path, { key: other.key, body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(errorOf(res).type).toBe('not_found_error');
    }

    const lists = await Promise.all(
      ['/v1/api-keys?limit=100', '/v1/providers?limit=100', '/v1/configs?limit=100'].map((p) => call(gw, 'GET', p, { key: other.key })),
    );
    const ids = lists.flatMap((l) => l.body.data.map((x: { id: string }) => x.id));
    expect(ids).not.toContain(key.body.id);
    expect(ids).not.toContain(config.body.id);
    expect(lists[1]!.body.data.map((p: { slug: string }) => p.slug)).not.toContain('private-openai');

    // Nothing changed for the owner.
    expect((await call(gw, 'GET', `/v1/api-keys/${key.body.id}`)).body.status).toBe('active');
    expect((await call(gw, 'GET', '/v1/providers/private-openai')).body.name).toBe('private-openai');
    expect((await call(gw, 'GET', '/v1/configs/private-config')).body.name).toBe('Private');
  });

  it('404 for malformed or overlong ids, 400 for an overlong cursor, never a 500', async () => {
    for (const path of [`/v1/api-keys/${'k'.repeat(3000)}`, `/v1/providers/${'p'.repeat(3000)}`, `/v1/configs/pc-${'c'.repeat(3000)}`, '/v1/providers/UPPER']) {
      const res = await call(gw, 'GET', path);
      expect(res.status, path.slice(0, 30)).toBe(404);
    }
    for (const path of ['/v1/api-keys', '/v1/providers', '/v1/configs']) {
      const res = await call(gw, 'GET', `${path}?after=${'x'.repeat(3000)}`);
      expect(res.status, path).toBe(400);
      expect(errorOf(res).param).toBe('after');
    }
  });
});
