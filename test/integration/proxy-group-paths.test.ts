import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, errorOf, startTestGateway } from '../support/gateway';

// Any provider path can be proxied, including paths under the prefixes of the gateway's own
// endpoint groups (/v1/fine_tuning, /v1/threads, /v1/assistants, /v1/rerank): a path or method
// the group does not implement goes to the provider the request names, and a request that
// names a provider with its own key (not a managed provider) goes to that provider's own
// Assistants / fine-tuning API, since the gateway's implementation needs a stored credential.

let gw: LocalGateway;
let fake: FakeServer;
const PROVIDER_KEY = 'sk-caller-own-key-0123456789';
const MANAGED_KEY = 'sk-managed-stored-key-0123456789';

const rawKey = () => ({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${fake.url}/v1`, authorization: `Bearer ${PROVIDER_KEY}` });

beforeAll(async () => {
  fake = await startOpenAIFake();
  gw = await startTestGateway();
  const created = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'proxy-openai', provider: 'openai', api_key: MANAGED_KEY, custom_host: `${fake.url}/v1` },
  });
  expect(created.status, created.text).toBe(200);
});

afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

beforeEach(() => fake.reset());

describe('paths a group does not implement', () => {
  it('GET /v1/fine_tuning/jobs/{id}/checkpoints reaches the provider with the path, query and caller key intact', async () => {
    const res = await call(gw, 'GET', '/v1/fine_tuning/jobs/ftjob-abc123/checkpoints?limit=2', { headers: rawKey() });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ method: 'GET', path: '/v1/fine_tuning/jobs/ftjob-abc123/checkpoints', query: { limit: '2' } });
    expect(fake.count()).toBe(1);
    expect(fake.last()!.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
    expect(fake.last()!.headers['x-gateway-api-key']).toBeUndefined();
  });

  it('with a managed provider, an unimplemented path is proxied with the stored key', async () => {
    const res = await call(gw, 'GET', '/v1/fine_tuning/jobs/ftjob-abc123/checkpoints', { headers: { 'x-gateway-provider': '@proxy-openai' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.path).toBe('/v1/fine_tuning/jobs/ftjob-abc123/checkpoints');
    expect(fake.last()!.headers.authorization).toBe(`Bearer ${MANAGED_KEY}`);
  });

  it('a method a gateway path does not implement is proxied when a provider is named', async () => {
    const res = await call(gw, 'DELETE', '/v1/fine_tuning/jobs/ftjob-abc123', { headers: rawKey() });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ method: 'DELETE', path: '/v1/fine_tuning/jobs/ftjob-abc123' });
  });

  it('rerank: an unimplemented path under /v1/rerank is proxied', async () => {
    const res = await call(gw, 'GET', '/v1/rerank/usage', { headers: rawKey() });
    expect(res.status, res.text).toBe(200);
    expect(res.body.path).toBe('/v1/rerank/usage');
  });

  it('without any provider, an unknown path is still a clear 404 and a wrong method a 405', async () => {
    const unknown = await call(gw, 'GET', '/v1/fine_tuning/jobs/ftjob-abc123/checkpoints');
    expect(unknown.status).toBe(404);
    expect(errorOf(unknown)).toMatchObject({ type: 'not_found_error' });
    expect(errorOf(unknown).message).toContain('Unknown route');
    const thread = await call(gw, 'GET', '/v1/threads/thread_x/nothing-here');
    expect(thread.status).toBe(404);
    const method = await call(gw, 'DELETE', '/v1/fine_tuning/jobs/ftjob-abc123');
    expect(method.status).toBe(405);
    expect(errorOf(method).code).toBe('method_not_allowed');
    expect(fake.count()).toBe(0);
  });

  it('the proxy still needs a valid gateway key', async () => {
    const res = await call(gw, 'GET', '/v1/fine_tuning/jobs/ftjob-abc123/checkpoints', { key: 'gw-wrong', headers: rawKey() });
    expect(res.status).toBe(401);
    expect(fake.count()).toBe(0);
  });
});

describe('assistants and fine-tuning with a raw provider key', () => {
  it('a raw-key assistants request goes to the provider’s own Assistants API, body and beta header unchanged', async () => {
    const body = { model: 'gpt-4o-mini', name: 'upstream assistant' };
    const res = await call(gw, 'POST', '/v1/assistants', { body, headers: { ...rawKey(), 'openai-beta': 'assistants=v2' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ method: 'POST', path: '/v1/assistants', body });
    expect(fake.last()!.headers).toMatchObject({ authorization: `Bearer ${PROVIDER_KEY}`, 'openai-beta': 'assistants=v2' });
    const run = await call(gw, 'POST', '/v1/threads/runs', { body: { assistant_id: 'asst_upstream' }, headers: rawKey() });
    expect(run.status, run.text).toBe(200);
    expect(run.body).toMatchObject({ path: '/v1/threads/runs', body: { assistant_id: 'asst_upstream' } });
  });

  it('a raw-key fine-tuning job is created by the provider, not stored by the gateway', async () => {
    const res = await call(gw, 'POST', '/v1/fine_tuning/jobs', { body: { model: 'gpt-4o-mini', training_file: 'file-x' }, headers: rawKey() });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ path: '/v1/fine_tuning/jobs', body: { training_file: 'file-x' } });
    const stored = await call(gw, 'GET', '/v1/fine_tuning/jobs', { headers: { 'x-gateway-provider': '@proxy-openai' } });
    expect(stored.status, stored.text).toBe(200);
    expect(stored.body.data).toEqual([]);
  });

  it('a managed provider still uses the gateway’s own assistants implementation', async () => {
    const res = await call(gw, 'POST', '/v1/assistants', { body: { model: 'gpt-4o-mini' }, headers: { 'x-gateway-provider': '@proxy-openai' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ object: 'assistant', provider: '@proxy-openai' });
    expect(res.body.id).toMatch(/^asst_/);
    const thread = await call(gw, 'POST', '/v1/threads', { body: {}, headers: { 'x-gateway-provider': '@proxy-openai' } });
    expect(thread.body.object).toBe('thread');
    expect(fake.count()).toBe(0);
  });

  it('a managed provider mixed with a per-request credential header is still refused', async () => {
    const res = await call(gw, 'POST', '/v1/threads', {
      body: {},
      headers: { 'x-gateway-provider': '@proxy-openai', 'x-gateway-custom-host': `${fake.url}/v1` },
    });
    expect(res.status).toBe(400);
    expect(errorOf(res)).toMatchObject({ code: 'managed_provider_required', param: 'x-gateway-custom-host' });
    expect(fake.count()).toBe(0);
  });
});
