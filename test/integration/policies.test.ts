import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { LocalGateway } from '../../infra/local/server';
import { call, errorOf, startTestGateway } from '../support/gateway';

// Shapes written from the spec tables: (policy), (single read), (list).
const condition = z.strictObject({ key: z.string(), value: z.string() });
const groupBy = z.strictObject({ key: z.string() });
const policyFields = {
  id: z.uuid(),
  type: z.enum(['requests', 'tokens']),
  unit: z.enum(['rpm', 'rph', 'rpd']),
  value: z.number(),
  status: z.enum(['active', 'archived']),
  workspace_id: z.uuid(),
  organisation_id: z.uuid(),
  created_at: z.iso.datetime(),
  last_updated_at: z.iso.datetime(),
  name: z.optional(z.nullable(z.string())),
  conditions: z.optional(z.array(condition)),
  group_by: z.optional(z.array(groupBy)),
};
/** With `object` on the single-policy read. */
const policySchema = z.strictObject({ ...policyFields, object: z.literal('policy_rate_limits') });
/** List items are policies without the `object` field. */
const listedPolicySchema = z.strictObject(policyFields);
const listSchema = z.strictObject({ object: z.literal('list'), data: z.array(listedPolicySchema), total: z.int().min(0) });

type Policy = z.infer<typeof policySchema>;
type PolicyList = z.infer<typeof listSchema>;

const BASE = '/v1/policies/rate-limits';

let gw: LocalGateway;
/** A second workspace of the organisation, with its own admin key. */
let other: { workspaceId: string; key: string };

beforeAll(async () => {
  gw = await startTestGateway();
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'Policies other' } });
  expect(ws.status).toBe(200);
  const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'other admin', workspace_id: ws.body.id, scopes: ['admin'] } });
  expect(key.status).toBe(200);
  other = { workspaceId: ws.body.id, key: key.body.secret };
});
afterAll(async () => {
  await gw?.stop();
});

async function createPolicy(body: Record<string, unknown>, key?: string): Promise<Policy> {
  const res = await call(gw, 'POST', BASE, { body, key });
  expect(res.status, res.text).toBe(200);
  return policySchema.parse(res.body);
}

async function listPolicies(query = '', key?: string): Promise<PolicyList> {
  const res = await call(gw, 'GET', `${BASE}${query}`, { key });
  expect(res.status, res.text).toBe(200);
  return listSchema.parse(res.body);
}

describe('create and read', () => {
  it('creates a policy and reads it back exactly as describe', async () => {
    const created = await createPolicy({
      name: 'per user',
      type: 'requests',
      unit: 'rpm',
      value: 10,
      conditions: [{ key: 'model', value: 'gpt-4o' }],
      group_by: [{ key: 'metadata._user' }],
    });
    expect(created).toMatchObject({
      object: 'policy_rate_limits',
      name: 'per user',
      type: 'requests',
      unit: 'rpm',
      value: 10,
      status: 'active',
      workspace_id: gw.workspaceId,
      organisation_id: gw.organisationId,
      conditions: [{ key: 'model', value: 'gpt-4o' }],
      group_by: [{ key: 'metadata._user' }],
    });
    expect(created.last_updated_at).toBe(created.created_at);

    const read = await call(gw, 'GET', `${BASE}/${created.id}`);
    expect(read.status).toBe(200);
    expect(policySchema.parse(read.body)).toEqual(created);

    const list = await listPolicies();
    const { object: _object, ...listed } = created;
    expect(list.data).toContainEqual(listed);
  });

  it('defaults: no name, no conditions, no group_by', async () => {
    const created = await createPolicy({ type: 'tokens', unit: 'rpd', value: 5000 });
    expect(created).toMatchObject({ name: null, conditions: [], group_by: [], type: 'tokens', unit: 'rpd', value: 5000 });
  });

  it('accepts a fractional value of at least 1, on create and update', async () => {
    const created = await createPolicy({ type: 'requests', unit: 'rpm', value: 1.5 });
    expect(created.value).toBe(1.5);
    const updated = await call(gw, 'PUT', `${BASE}/${created.id}`, { body: { value: 1000.25 } });
    expect(updated.status).toBe(200);
    expect(updated.body.value).toBe(1000.25);
  });

  it('accepts every allowed condition and group-by key, and the wildcard value', async () => {
    const keys = ['api_key', 'workspace_id', 'organisation_id', 'provider', 'model', 'metadata._user', 'metadata.team'];
    const created = await createPolicy({
      type: 'requests',
      unit: 'rph',
      value: 1,
      conditions: keys.map((key) => ({ key, value: '*' })),
      group_by: keys.map((key) => ({ key })),
    });
    expect(created.conditions!.map((c) => c.key)).toEqual(keys);
    expect(created.group_by!.map((g) => g.key)).toEqual(keys);
  });

  it('404 for an unknown id, a non-uuid id and an unknown workspace', async () => {
    for (const id of ['0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', 'not-a-uuid', 'x'.repeat(2000)]) {
      const res = await call(gw, 'GET', `${BASE}/${id}`);
      expect(res.status).toBe(404);
      expect(errorOf(res)).toMatchObject({ type: 'not_found_error' });
    }
    const res = await call(gw, 'POST', BASE, { body: { type: 'requests', unit: 'rpm', value: 1, workspace_id: 'no-such-workspace' } });
    expect(res.status).toBe(404);
    expect(errorOf(res)).toMatchObject({ type: 'not_found_error', param: 'workspace_id' });
  });
});

describe('validation', () => {
  it('400 naming an unknown condition or group-by key', async () => {
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [
        {
          conditions: [
            { key: 'model', value: 'a' },
            { key: 'colour', value: 'red' },
          ],
        },
        'conditions[1].key',
        'colour',
      ],
      [{ group_by: [{ key: 'user' }] }, 'group_by[0].key', 'user'],
      [{ conditions: [{ key: 'metadata.', value: 'x' }] }, 'conditions[0].key', 'metadata.'],
      [{ group_by: [{ key: 'model' }, { key: 'model' }] }, 'group_by[1].key', 'model'],
    ];
    for (const [extra, param, named] of cases) {
      const res = await call(gw, 'POST', BASE, { body: { type: 'requests', unit: 'rpm', value: 1, ...extra } });
      expect(res.status, JSON.stringify(extra)).toBe(400);
      const err = errorOf(res);
      expect(err).toMatchObject({ type: 'invalid_request_error', param });
      expect(err.message).toContain(named);
    }
  });

  it('400 naming the field for bad type, unit, value and unknown fields', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ type: 'calls', unit: 'rpm', value: 1 }, 'type'],
      [{ type: 'requests', unit: 'rps', value: 1 }, 'unit'],
      [{ type: 'requests', unit: 'rpm', value: 0 }, 'value'],
      [{ type: 'requests', unit: 'rpm', value: -3 }, 'value'],
      [{ type: 'requests', unit: 'rpm', value: 0.5 }, 'value'],
      [{ type: 'tokens', unit: 'rpm', value: 0.99 }, 'value'],
      [{ type: 'requests', unit: 'rpm' }, 'value'],
      [{ type: 'requests', unit: 'rpm', value: 1, conditions: [{ key: 'model' }] }, 'conditions[0].value'],
      [{ type: 'requests', unit: 'rpm', value: 1, colour: 'red' }, 'colour'],
    ];
    for (const [body, param] of cases) {
      const res = await call(gw, 'POST', BASE, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(errorOf(res).param, JSON.stringify(body)).toBe(param);
    }
  });

  it('400 for out-of-range list parameters', async () => {
    for (const query of ['page_size=-1', 'current_page=-1', 'page_size=abc', 'status=deleted', 'type=calls', 'unit=rps']) {
      const res = await call(gw, 'GET', `${BASE}?${query}`);
      expect(res.status, query).toBe(400);
      expect(errorOf(res).param).toBe(query.split('=')[0]);
    }
  });

  it('403 for a gateway-scoped key', async () => {
    const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'data plane', scopes: ['gateway'] } });
    const res = await call(gw, 'GET', BASE, { key: key.body.secret });
    expect(res.status).toBe(403);
    expect(errorOf(res).type).toBe('permission_error');
  });
});

describe('update, archive, delete', () => {
  it('PUT changes the fields and moves last_updated_at forward', async () => {
    const created = await createPolicy({ name: 'before', type: 'requests', unit: 'rpm', value: 5 });
    const res = await call(gw, 'PUT', `${BASE}/${created.id}`, {
      body: { name: 'after', value: 7, unit: 'rph', type: 'tokens', conditions: [{ key: 'provider', value: 'openai' }], group_by: [{ key: 'api_key' }] },
    });
    expect(res.status, res.text).toBe(200);
    const updated = policySchema.parse(res.body);
    expect(updated).toMatchObject({
      id: created.id,
      name: 'after',
      value: 7,
      unit: 'rph',
      type: 'tokens',
      status: 'active',
      conditions: [{ key: 'provider', value: 'openai' }],
      group_by: [{ key: 'api_key' }],
      created_at: created.created_at,
    });
    expect(Date.parse(updated.last_updated_at)).toBeGreaterThan(Date.parse(created.last_updated_at));
    const read = await call(gw, 'GET', `${BASE}/${created.id}`);
    expect(read.body).toEqual(updated);

    const cleared = await call(gw, 'PUT', `${BASE}/${created.id}`, { body: { name: null } });
    expect(cleared.body.name).toBeNull();
    expect(Date.parse(cleared.body.last_updated_at)).toBeGreaterThan(Date.parse(updated.last_updated_at));
  });

  it('PUT validates like POST and 404s an unknown id', async () => {
    const created = await createPolicy({ type: 'requests', unit: 'rpm', value: 5 });
    const bad = await call(gw, 'PUT', `${BASE}/${created.id}`, { body: { group_by: [{ key: 'nope' }] } });
    expect(bad.status).toBe(400);
    expect(errorOf(bad).param).toBe('group_by[0].key');
    const zero = await call(gw, 'PUT', `${BASE}/${created.id}`, { body: { value: 0 } });
    expect(errorOf(zero).param).toBe('value');
    const unknown = await call(gw, 'PUT', `${BASE}/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b`, { body: { value: 3 } });
    expect(unknown.status).toBe(404);
  });

  it('archive by PUT status: hidden from default reads, visible with status=archived, and reversible', async () => {
    const created = await createPolicy({ name: 'to archive', type: 'requests', unit: 'rpd', value: 100 });
    const archived = await call(gw, 'PUT', `${BASE}/${created.id}`, { body: { status: 'archived' } });
    expect(archived.status).toBe(200);
    expect(policySchema.parse(archived.body).status).toBe('archived');

    const hidden = await call(gw, 'GET', `${BASE}/${created.id}`);
    expect(hidden.status).toBe(404);
    expect(errorOf(hidden).type).toBe('not_found_error');
    const shown = await call(gw, 'GET', `${BASE}/${created.id}?status=archived`);
    expect(shown.status).toBe(200);
    expect(policySchema.parse(shown.body)).toEqual(archived.body);

    expect((await listPolicies()).data.map((p) => p.id)).not.toContain(created.id);
    const archivedList = await listPolicies('?status=archived');
    expect(archivedList.data.map((p) => p.id)).toContain(created.id);
    expect(archivedList.data.every((p) => p.status === 'archived')).toBe(true);

    const active = await call(gw, 'GET', `${BASE}/${created.id}?status=active`);
    expect(active.status).toBe(404);
    const restored = await call(gw, 'PUT', `${BASE}/${created.id}`, { body: { status: 'active' } });
    expect(restored.body.status).toBe('active');
    expect((await call(gw, 'GET', `${BASE}/${created.id}`)).status).toBe(200);
  });

  it('archive by POST .../archive', async () => {
    const created = await createPolicy({ type: 'tokens', unit: 'rpm', value: 1000 });
    const res = await call(gw, 'POST', `${BASE}/${created.id}/archive`);
    expect(res.status).toBe(200);
    expect(policySchema.parse(res.body)).toMatchObject({ id: created.id, status: 'archived' });
    expect((await call(gw, 'GET', `${BASE}/${created.id}`)).status).toBe(404);
    expect((await call(gw, 'POST', `${BASE}/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/archive`)).status).toBe(404);
  });

  it('DELETE removes the policy, whatever its status', async () => {
    const created = await createPolicy({ type: 'requests', unit: 'rpm', value: 1 });
    const res = await call(gw, 'DELETE', `${BASE}/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: created.id, deleted: true });
    for (const status of ['active', 'archived']) {
      expect((await call(gw, 'GET', `${BASE}/${created.id}?status=${status}`)).status).toBe(404);
    }
    expect((await call(gw, 'DELETE', `${BASE}/${created.id}`)).status).toBe(404);

    const archived = await createPolicy({ type: 'requests', unit: 'rpm', value: 1 });
    await call(gw, 'POST', `${BASE}/${archived.id}/archive`);
    expect((await call(gw, 'DELETE', `${BASE}/${archived.id}`)).status).toBe(200);
    expect((await listPolicies('?status=archived')).data.map((p) => p.id)).not.toContain(archived.id);
  });
});

describe('list: filters, paging and total', () => {
  let slug: string;
  let workspaceId: string;
  const made: Policy[] = [];

  beforeAll(async () => {
    const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'Paging team' } });
    slug = ws.body.slug;
    workspaceId = ws.body.id;
    const specs = [
      { type: 'requests', unit: 'rpm' },
      { type: 'requests', unit: 'rph' },
      { type: 'tokens', unit: 'rpm' },
      { type: 'requests', unit: 'rpm' },
      { type: 'tokens', unit: 'rpd' },
    ];
    for (const [i, spec] of specs.entries()) made.push(await createPolicy({ ...spec, value: i + 1, name: `p${i}`, workspace_id: slug }));
    // One archived policy that the default listing never shows.
    const gone = await createPolicy({ type: 'requests', unit: 'rpm', value: 9, workspace_id: workspaceId });
    const res = await call(gw, 'PUT', `${BASE}/${gone.id}?workspace_id=${slug}`, { body: { status: 'archived' } });
    expect(res.status).toBe(200);
  });

  it('creates in the named workspace (id or slug) and lists it by workspace_id', async () => {
    expect(made.every((p) => p.workspace_id === workspaceId)).toBe(true);
    for (const ref of [slug, workspaceId]) {
      const list = await listPolicies(`?workspace_id=${ref}`);
      expect(list.total).toBe(5);
      // Newest first.
      expect(list.data.map((p) => p.id)).toEqual(made.map((p) => p.id).reverse());
    }
    // Not in the key's own workspace.
    const own = await listPolicies();
    expect(own.data.map((p) => p.id)).not.toContain(made[0]!.id);
    const missing = await call(gw, 'GET', `${BASE}?workspace_id=nowhere`);
    expect(missing.status).toBe(404);
  });

  it('filters by type, unit and status; total counts all matches', async () => {
    const requests = await listPolicies(`?workspace_id=${slug}&type=requests`);
    expect(requests.total).toBe(3);
    expect(requests.data.every((p) => p.type === 'requests')).toBe(true);
    const rpm = await listPolicies(`?workspace_id=${slug}&unit=rpm`);
    expect(rpm.total).toBe(3);
    const both = await listPolicies(`?workspace_id=${slug}&type=tokens&unit=rpm`);
    expect(both.data.map((p) => p.name)).toEqual(['p2']);
    expect(both.total).toBe(1);
    const archived = await listPolicies(`?workspace_id=${slug}&status=archived`);
    expect(archived.total).toBe(1);
    expect(archived.data[0]!.value).toBe(9);
  });

  it('pages with page_size and zero-based current_page, total unchanged', async () => {
    const pages: string[][] = [];
    for (let page = 0; page < 4; page++) {
      const list = await listPolicies(`?workspace_id=${slug}&page_size=2&current_page=${page}`);
      expect(list.total).toBe(5);
      pages.push(list.data.map((p) => p.id));
    }
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1, 0]);
    expect(pages.flat()).toEqual(made.map((p) => p.id).reverse());

    const empty = await listPolicies(`?workspace_id=${slug}&page_size=0`);
    expect(empty).toEqual({ object: 'list', data: [], total: 5 });
    const defaults = await listPolicies(`?workspace_id=${slug}&current_page=0`);
    expect(defaults.data).toHaveLength(5);
    const filteredPage = await listPolicies(`?workspace_id=${slug}&type=requests&page_size=2&current_page=1`);
    expect(filteredPage.total).toBe(3);
    expect(filteredPage.data.map((p) => p.name)).toEqual(['p0']);
  });
});

describe('workspace isolation', () => {
  it("another workspace's policies are invisible and 404 by id", async () => {
    const theirs = await createPolicy({ name: 'theirs', type: 'requests', unit: 'rpm', value: 3 }, other.key);
    expect(theirs.workspace_id).toBe(other.workspaceId);
    const mine = await createPolicy({ name: 'mine', type: 'requests', unit: 'rpm', value: 3 });

    expect((await listPolicies()).data.map((p) => p.id)).not.toContain(theirs.id);
    expect((await listPolicies('', other.key)).data.map((p) => p.id)).toEqual([theirs.id]);
    expect((await listPolicies('?status=archived', other.key)).total).toBe(0);

    for (const [method, path, body] of [
      ['GET', `${BASE}/${theirs.id}`, undefined],
      ['GET', `${BASE}/${theirs.id}?status=archived`, undefined],
      ['PUT', `${BASE}/${theirs.id}`, { value: 1000 }],
      ['POST', `${BASE}/${theirs.id}/archive`, undefined],
      ['DELETE', `${BASE}/${theirs.id}`, undefined],
    ] as const) {
      const res = await call(gw, method, path, { body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(errorOf(res).type).toBe('not_found_error');
    }
    const mineFromOther = await call(gw, 'GET', `${BASE}/${mine.id}`, { key: other.key });
    expect(mineFromOther.status).toBe(404);

    // Untouched by the attempts above.
    const still = await call(gw, 'GET', `${BASE}/${theirs.id}`, { key: other.key });
    expect(policySchema.parse(still.body)).toEqual(theirs);
  });
});
