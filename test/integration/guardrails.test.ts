import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as z from 'zod/mini';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { call, errorOf, startTestGateway } from '../support/gateway';

// Config is parsed once per process: functions/ modules are imported dynamically, after
// the gateway has put its env (trusted 127.0.0.1, caches off) in place.
let gw: LocalGateway;
/** A second workspace of the same organisation, with its own admin key. */
let other: { workspaceId: string; slug: string; key: string };
let hook: http.Server;
let hookUrl: string;

type Evaluate = typeof import('../../functions/guardrails/evaluate');
let evaluateGuardrails: Evaluate['evaluateGuardrails'];
let guardrailError: Evaluate['guardrailError'];

beforeAll(async () => {
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0', CONTROL_CACHE_TTL_MS: '0' } });
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'Guard team' } });
  expect(ws.status).toBe(200);
  const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'guard admin', workspace_id: ws.body.id, scopes: ['admin', 'gateway'] } });
  expect(key.status).toBe(200);
  other = { workspaceId: ws.body.id, slug: ws.body.slug, key: key.body.secret };
  ({ evaluateGuardrails, guardrailError } = await import('../../functions/guardrails/evaluate'));
  // A webhook that always fails with 500, for failOnError.
  hook = http.createServer((_req, res) => res.writeHead(500, { 'content-type': 'application/json' }).end('{}'));
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  hook?.closeAllConnections();
  await new Promise<void>((resolve) => (hook ? hook.close(() => resolve()) : resolve()));
  await gw?.stop();
});

// ---- response shapes, written from the spec and the issue -----------------------

/** Id, slug (URL-friendly), version_id; all required. */
const creationResult = z.strictObject({
  id: z.string().check(z.minLength(1)),
  slug: z.string().check(z.regex(/^[a-z0-9]+(?:-[a-z0-9]+)*$/)),
  version_id: z.string().check(z.minLength(1)),
});

const check = z.object({ id: z.string(), parameters: z.record(z.string(), z.unknown()) });
const guardrailRecord = z.object({
  id: z.string(),
  slug: z.string(),
  name: z.string(),
  checks: z.array(check).check(z.minLength(1)),
  actions: z.object({ onFail: z.enum(['block', 'log', 'warn']), message: z.optional(z.string()), deny: z.optional(z.boolean()) }),
  version_id: z.string(),
  version: z.int().check(z.gte(1)),
  created_at: z.int(),
  updated_at: z.int(),
});
const listShape = z.object({
  object: z.literal('list'),
  data: z.array(guardrailRecord),
  first_id: z.nullable(z.string()),
  last_id: z.nullable(z.string()),
  has_more: z.boolean(),
});

function expectShape<T extends z.ZodMiniType>(schema: T, value: unknown): z.infer<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw new Error(`shape mismatch: ${JSON.stringify(result.error.issues)}\n${JSON.stringify(value)}`);
  return result.data;
}

const contains = (words: string[], operator = 'none') => ({ id: 'default.contains', parameters: { words, operator } });
const body = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  checks: [contains(['forbidden'])],
  actions: { onFail: 'block', message: 'Not allowed.' },
  ...extra,
});

async function create(b: unknown, key?: string) {
  const res = await call(gw, 'POST', '/v1/guardrails', { body: b, ...(key ? { key } : {}) });
  expect(res.status, res.text).toBe(200);
  return expectShape(creationResult, res.body);
}

const input = (text: string, request: Record<string, unknown> = {}) => ({
  kind: 'input' as const,
  text,
  request: { route: 'chat', metadata: {}, headers: {}, ...request },
});

describe('create, read, list, update, delete', () => {
  it('creates a guardrail and returns the result; GET by id and by slug return the full record', async () => {
    const created = await create(body('No Forbidden Words!'));
    expect(created.slug).toBe('no-forbidden-words');
    for (const ref of [created.id, created.slug]) {
      const got = await call(gw, 'GET', `/v1/guardrails/${ref}`);
      expect(got.status).toBe(200);
      const record = expectShape(guardrailRecord, got.body);
      expect(record).toMatchObject({
        id: created.id,
        slug: created.slug,
        name: 'No Forbidden Words!',
        version_id: created.version_id,
        version: 1,
        checks: [contains(['forbidden'])],
        actions: { onFail: 'block', message: 'Not allowed.' },
      });
      expect(record.updated_at).toBe(record.created_at);
    }
  });

  it('keeps slugs unique per workspace', async () => {
    const a = await create(body('Twin'));
    const b = await create(body('Twin'));
    expect(a.slug).toBe('twin');
    expect(b.slug).not.toBe(a.slug);
    expect(b.slug).toMatch(/^twin-/);
    // The same name in another workspace takes the plain slug.
    const c = await create(body('Twin'), other.key);
    expect(c.slug).toBe('twin');
  });

  it('stores parameters exactly as sent (JSON round trip)', async () => {
    const schema = { type: 'object', properties: { n: { type: 'number', minimum: 0.5 } }, required: ['n'], additionalProperties: {} };
    const created = await create({
      name: 'Schema',
      checks: [{ id: 'default.jsonSchema', parameters: { schema, failOnError: true } }],
      actions: { onFail: 'warn' },
    });
    const got = await call(gw, 'GET', `/v1/guardrails/${created.id}`);
    expect(got.body.checks).toEqual([{ id: 'default.jsonSchema', parameters: { schema, failOnError: true } }]);
  });

  it('lists guardrails of the workspace as a paginated OpenAI list', async () => {
    await create(body('List one'));
    await create(body('List two'));
    const all = await call(gw, 'GET', '/v1/guardrails?limit=100');
    expect(all.status).toBe(200);
    const list = expectShape(listShape, all.body);
    expect(list.has_more).toBe(false);
    const ids = list.data.map((g) => g.id);
    expect(ids.length).toBeGreaterThanOrEqual(2);
    const first = expectShape(listShape, (await call(gw, 'GET', '/v1/guardrails?limit=2')).body);
    expect(first.has_more).toBe(true);
    expect(first.data.map((g) => g.id)).toEqual(ids.slice(0, 2));
    const rest = expectShape(listShape, (await call(gw, 'GET', `/v1/guardrails?limit=100&after=${first.last_id}`)).body);
    expect([...first.data, ...rest.data].map((g) => g.id)).toEqual(ids);
    const desc = expectShape(listShape, (await call(gw, 'GET', '/v1/guardrails?limit=100&order=desc')).body);
    expect(desc.data.map((g) => g.id)).toEqual([...ids].reverse());
  });

  it('PUT creates a new immutable version and moves the guardrail to it', async () => {
    const created = await create(body('Versioned'));
    const put = await call(gw, 'PUT', `/v1/guardrails/${created.slug}`, {
      body: { checks: [contains(['forbidden', 'banned'])], actions: { onFail: 'warn' } },
    });
    expect(put.status, put.text).toBe(200);
    const v2 = expectShape(creationResult, put.body);
    expect(v2).toMatchObject({ id: created.id, slug: created.slug });
    expect(v2.version_id).not.toBe(created.version_id);
    const got = expectShape(guardrailRecord, (await call(gw, 'GET', `/v1/guardrails/${created.id}`)).body);
    expect(got).toMatchObject({ version: 2, version_id: v2.version_id, name: 'Versioned', actions: { onFail: 'warn' } });
    expect(got.checks).toEqual([contains(['forbidden', 'banned'])]);

    const renamed = await call(gw, 'PUT', `/v1/guardrails/${created.id}`, { body: { name: 'Versioned again' } });
    const v3 = expectShape(creationResult, renamed.body);
    expect(v3.slug).toBe(created.slug); // the slug is stable across renames
    const versions = await call(gw, 'GET', `/v1/guardrails/${created.id}/versions`);
    expect(versions.status).toBe(200);
    expect(versions.body.data.map((v: { id: string; version: number }) => [v.id, v.version])).toEqual([
      [created.version_id, 1],
      [v2.version_id, 2],
      [v3.version_id, 3],
    ]);
    // Version 1 still holds the original definition.
    expect(versions.body.data[0]).toMatchObject({ name: 'Versioned', checks: [contains(['forbidden'])], actions: { onFail: 'block' } });
    expect(versions.body.data[2]).toMatchObject({ name: 'Versioned again', checks: [contains(['forbidden', 'banned'])] });
  });

  it('DELETE removes the guardrail; its slug can be used again', async () => {
    const created = await create(body('Short lived'));
    const del = await call(gw, 'DELETE', `/v1/guardrails/${created.slug}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ object: 'guardrail.deleted', id: created.id, slug: created.slug, deleted: true });
    for (const [method, path] of [
      ['GET', `/v1/guardrails/${created.id}`],
      ['GET', `/v1/guardrails/${created.slug}`],
      ['GET', `/v1/guardrails/${created.id}/versions`],
      ['DELETE', `/v1/guardrails/${created.id}`],
    ] as const) {
      const res = await call(gw, method, path);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(errorOf(res).type).toBe('not_found_error');
    }
    const put = await call(gw, 'PUT', `/v1/guardrails/${created.id}`, { body: { name: 'x' } });
    expect(put.status).toBe(404);
    const again = await create(body('Short lived'));
    expect(again.slug).toBe(created.slug);
    expect(again.id).not.toBe(created.id);
  });
});

describe('validation', () => {
  it('400s naming the check and the parameter', async () => {
    const regex = (rule: unknown) => ({ id: 'default.regexMatch', parameters: { rule } });
    const cases: Array<[unknown, string, string[]]> = [
      [{ ...body('x'), checks: [contains(['a']), { id: 'default.unknown', parameters: {} }] }, 'checks[1].id', ['default.unknown']],
      [{ ...body('x'), checks: [contains(['a']), regex('(')] }, 'checks[1].parameters.rule', ['default.regexMatch', 'checks[1]', 'rule']],
      [{ ...body('x'), checks: [regex(7)] }, 'checks[0].parameters.rule', ['default.regexMatch', 'rule']],
      [
        { ...body('x'), checks: [{ id: 'default.wordCount', parameters: { minWords: 9, maxWords: 1 } }] },
        'checks[0].parameters.maxWords',
        ['default.wordCount', 'maxWords'],
      ],
      [
        {
          ...body('x'),
          checks: [{ id: 'default.jwt', parameters: { jwksUri: 'https://idp.example.com/jwks', headerKey: 'authorization', maxTokenAge: 'forever' } }],
        },
        'checks[0].parameters.maxTokenAge',
        ['default.jwt', 'maxTokenAge'],
      ],
      [
        { ...body('x'), checks: [{ id: 'default.contains', parameters: { words: ['a'], failOnError: 'sometimes' } }] },
        'checks[0].parameters.failOnError',
        ['failOnError'],
      ],
      [{ ...body('x'), checks: [] }, 'checks', ['checks']],
      [{ ...body('x'), checks: [{ parameters: {} }] }, 'checks[0].id', ['checks[0].id']],
      [{ ...body('x'), actions: { onFail: 'explode' } }, 'actions.onFail', ['actions.onFail']],
      [{ ...body('x'), actions: undefined }, 'actions', ['actions']],
      [{ ...body('x'), name: '' }, 'name', ['name']],
      [{ ...body('x'), colour: 'red' }, 'colour', ['colour']],
    ];
    for (const [b, param, words] of cases) {
      const res = await call(gw, 'POST', '/v1/guardrails', { body: b });
      expect(res.status, JSON.stringify(b)).toBe(400);
      const err = errorOf(res);
      expect(err.type).toBe('invalid_request_error');
      expect(err.param, JSON.stringify(b)).toBe(param);
      for (const w of words) expect(err.message, JSON.stringify(b)).toContain(w);
    }
  });

  it('validates PUT bodies the same way and refuses an empty update', async () => {
    const created = await create(body('Put validation'));
    const bad = await call(gw, 'PUT', `/v1/guardrails/${created.id}`, { body: { checks: [{ id: 'default.regexMatch', parameters: { rule: '[' } }] } });
    expect(bad.status).toBe(400);
    expect(errorOf(bad)).toMatchObject({ param: 'checks[0].parameters.rule' });
    expect(errorOf(bad).message).toContain('default.regexMatch');
    const empty = await call(gw, 'PUT', `/v1/guardrails/${created.id}`, { body: {} });
    expect(empty.status).toBe(400);
    const got = await call(gw, 'GET', `/v1/guardrails/${created.id}`);
    expect(got.body.version).toBe(1);
  });
});

describe('scoping and isolation', () => {
  it('workspace_id (id or slug) of the organisation selects the workspace', async () => {
    for (const workspace_id of [other.workspaceId, other.slug]) {
      const created = await create(body(`Remote ${workspace_id.slice(0, 8)}`, { workspace_id, organisation_id: gw.organisationId }));
      expect((await call(gw, 'GET', `/v1/guardrails/${created.id}`)).status).toBe(404);
      expect((await call(gw, 'GET', `/v1/guardrails/${created.id}`, { key: other.key })).status).toBe(200);
      const viaQuery = await call(gw, 'GET', `/v1/guardrails/${created.id}?workspace_id=${workspace_id}`);
      expect(viaQuery.status).toBe(200);
      expect(viaQuery.body.id).toBe(created.id);
    }
  });

  it('404 for a workspace or organisation outside the key organisation', async () => {
    const { createOrganisation, createWorkspace } = await import('../../functions/shared/stores/workspaces');
    const org = await createOrganisation('Elsewhere');
    const foreign = await createWorkspace({ organisationId: org.id, name: 'Their team' });
    for (const [extra, param] of [
      [{ workspace_id: foreign.id }, 'workspace_id'],
      [{ workspace_id: 'no-such-workspace' }, 'workspace_id'],
      [{ organisation_id: org.id }, 'organisation_id'],
      [{ organisation_id: gw.organisationId, workspace_id: foreign.id }, 'workspace_id'],
    ] as const) {
      const res = await call(gw, 'POST', '/v1/guardrails', { body: body('Sneaky', extra) });
      expect(res.status, JSON.stringify(extra)).toBe(404);
      expect(errorOf(res)).toMatchObject({ type: 'not_found_error', param });
    }
    const listed = await call(gw, 'GET', `/v1/guardrails?workspace_id=${foreign.id}`);
    expect(listed.status).toBe(404);
  });

  it("another workspace's guardrail is a 404 for every operation and absent from its list", async () => {
    const mine = await create(body('Mine only'));
    for (const [method, path, b] of [
      ['GET', `/v1/guardrails/${mine.id}`, undefined],
      ['GET', `/v1/guardrails/${mine.slug}`, undefined],
      ['GET', `/v1/guardrails/${mine.id}/versions`, undefined],
      ['PUT', `/v1/guardrails/${mine.id}`, { name: 'taken over' }],
      ['DELETE', `/v1/guardrails/${mine.id}`, undefined],
    ] as const) {
      const res = await call(gw, method, path, { key: other.key, ...(b ? { body: b } : {}) });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(errorOf(res).type).toBe('not_found_error');
    }
    const theirs = await call(gw, 'GET', '/v1/guardrails?limit=100', { key: other.key });
    expect(theirs.body.data.map((g: { id: string }) => g.id)).not.toContain(mine.id);
    const still = await call(gw, 'GET', `/v1/guardrails/${mine.id}`);
    expect(still.body).toMatchObject({ name: 'Mine only', version: 1 });
  });

  it('needs a key with the admin scope', async () => {
    const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'data plane only', scopes: ['gateway'] } });
    const res = await call(gw, 'GET', '/v1/guardrails', { key: key.body.secret });
    expect(res.status).toBe(403);
    expect((await call(gw, 'GET', '/v1/guardrails', { key: null })).status).toBe(401);
  });
});

describe('evaluateGuardrails with stored guardrails', () => {
  it('block, warn and pass', async () => {
    const blocker = await create(body('Eval blocker'));
    const warner = await create({ name: 'Eval warner', checks: [{ id: 'default.wordCount', parameters: { maxWords: 5 } }], actions: { onFail: 'warn' } });
    const refs = [blocker.id, warner.slug];

    const pass = await evaluateGuardrails(refs, gw.workspaceId, input('short and fine'));
    expect(pass.verdict).toBe('pass');
    expect(pass.hook_results.map((h) => ({ id: h.id, type: h.type, verdict: h.verdict, deny: h.deny }))).toEqual([
      { id: blocker.id, type: 'guardrail', verdict: true, deny: true },
      { id: warner.id, type: 'guardrail', verdict: true, deny: false },
    ]);

    const warn = await evaluateGuardrails(refs, gw.workspaceId, input('this text is a little bit too long'));
    expect(warn.verdict).toBe('warn');
    expect(warn.hook_results[1]!.checks[0]).toMatchObject({ id: 'default.wordCount', verdict: false });

    const block = await evaluateGuardrails(refs, gw.workspaceId, input('forbidden'));
    expect(block.verdict).toBe('block');
    const err = guardrailError(block);
    expect(err.status).toBe(446);
    expect(err.toBody()).toMatchObject({
      error: { type: 'guardrail_error', code: 'guardrail_blocked', message: 'Not allowed.', param: null },
      hook_results: block.hook_results,
    });
  });

  it('uses the latest version after an update', async () => {
    const g = await create(body('Eval versions'));
    expect((await evaluateGuardrails([g.id], gw.workspaceId, input('banned'))).verdict).toBe('pass');
    await call(gw, 'PUT', `/v1/guardrails/${g.id}`, { body: { checks: [contains(['banned'])] } });
    expect((await evaluateGuardrails([g.id], gw.workspaceId, input('banned'))).verdict).toBe('block');
  });

  it('failOnError decides what an error means', async () => {
    const webhook = (failOnError: boolean) => ({ id: 'default.webhook', parameters: { webhookURL: hookUrl, failOnError } });
    const lenient = await create({ name: 'Eval lenient', checks: [webhook(false)], actions: { onFail: 'block' } });
    const strict = await create({ name: 'Eval strict', checks: [webhook(true)], actions: { onFail: 'block' } });
    const ok = await evaluateGuardrails([lenient.id], gw.workspaceId, input('x'));
    expect(ok.verdict).toBe('pass');
    expect(ok.hook_results[0]!.checks[0]).toMatchObject({ id: 'default.webhook', verdict: true, error: expect.stringContaining('500') });
    const blocked = await evaluateGuardrails([lenient.id, strict.id], gw.workspaceId, input('x'));
    expect(blocked.verdict).toBe('block');
    expect(blocked.hook_results.map((h) => h.verdict)).toEqual([true, false]);
  });

  it('mixes stored and inline guardrails, and refuses unknown or foreign refs', async () => {
    const stored = await create(body('Eval mixed'));
    const inline = { checks: [{ id: 'default.modelWhitelist', parameters: { models: ['gpt-4o'] } }], actions: { onFail: 'log' } };
    const out = await evaluateGuardrails([stored.slug, inline], gw.workspaceId, input('fine', { model: 'gpt-3.5' }));
    expect(out.verdict).toBe('warn');
    expect(out.hook_results.map((h) => h.id)).toEqual([stored.id, 'inline_1']);

    for (const [ref, ws] of [
      ['no-such-guardrail', gw.workspaceId],
      [stored.id, other.workspaceId],
    ] as const) {
      const err = await evaluateGuardrails([ref], ws, input('x')).catch((e: unknown) => e);
      expect(err).toMatchObject({ status: 400, code: 'guardrail_not_found' });
    }
  });
});
