import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { LocalGateway } from '../../infra/local/server';
import { startAnthropicFake, startOpenAIFake, type FakeServer } from '../fakes';
import { call, errorOf, logsOf, startTestGateway } from '../support/gateway';

// Clients that let a user set only a base URL and an API key (coding agents, most tools):
// the gateway key travels in the client's own key header, and the key's default config
// says where its requests go.
let gw: LocalGateway;
let openaiFake: FakeServer;
let anthropicFake: FakeServer;
const MANAGED_OPENAI_KEY = 'sk-managed-openai-0123456789';
const MANAGED_ANTHROPIC_KEY = 'sk-ant-managed-0123456789';

/** A gateway-scope key with the given default config; returns its id and secret. */
async function keyWith(defaultConfig: unknown): Promise<{ id: string; secret: string }> {
  const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'agent', default_config: defaultConfig } });
  expect(created.status, created.text).toBe(200);
  return { id: created.body.id, secret: created.body.secret };
}

beforeAll(async () => {
  [openaiFake, anthropicFake] = await Promise.all([startOpenAIFake(), startAnthropicFake()]);
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0' } });
  for (const body of [
    { slug: 'team-openai', provider: 'openai', api_key: MANAGED_OPENAI_KEY, custom_host: `${openaiFake.url}/v1` },
    { slug: 'team-claude', provider: 'anthropic', api_key: MANAGED_ANTHROPIC_KEY, custom_host: `${anthropicFake.url}/v1` },
  ]) {
    const created = await call(gw, 'POST', '/v1/providers', { body });
    expect(created.status, created.text).toBe(200);
  }
  const config = await call(gw, 'POST', '/v1/configs', {
    body: {
      name: 'claude first',
      slug: 'claude-first',
      config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@team-claude' }, { provider: '@team-openai' }] },
    },
  });
  expect(config.status, config.text).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all([openaiFake?.close(), anthropicFake?.close()]);
});
beforeEach(() => {
  openaiFake.reset();
  anthropicFake.reset();
});

const allUpstreamHeaders = () => [...openaiFake.requests, ...anthropicFake.requests].map((r) => JSON.stringify(r.headers));

describe('a gateway key in the client key header', () => {
  it('the OpenAI SDK with only baseURL and apiKey reaches the provider of the key default config (saved config by slug)', async () => {
    const key = await keyWith('claude-first');
    const client = new OpenAI({ baseURL: gw.baseUrl, apiKey: key.secret, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'Say hi' }] });
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0]!.message.content).toBeTruthy();
    expect(anthropicFake.count('/v1/messages')).toBe(1);
    expect(anthropicFake.last()!.headers['x-api-key']).toBe(MANAGED_ANTHROPIC_KEY);

    const stream = await client.chat.completions.create({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'Say hi' }], stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBeTruthy();
    // The gateway key never leaves the gateway.
    for (const headers of allUpstreamHeaders()) expect(headers).not.toContain(key.secret);
  });

  it('accepts the key from x-api-key (Anthropic clients) with an inline default config, and never forwards or logs it', async () => {
    const key = await keyWith({ provider: '@team-openai', forward_headers: ['x-api-key', 'authorization'] });
    const res = await fetch(`${gw.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key.secret, 'x-gateway-trace-id': 'key-only-trace' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const upstream = openaiFake.last()!;
    expect(upstream.headers.authorization).toBe(`Bearer ${MANAGED_OPENAI_KEY}`);
    expect(upstream.headers['x-api-key']).toBeUndefined();

    const logs = await logsOf(gw, 'trace_id=key-only-trace');
    expect(logs.status).toBe(200);
    expect(logs.body.data.length).toBe(1);
    expect(logs.text).not.toContain(key.secret);
  });

  it('a request that names its own provider is not routed by the key default config', async () => {
    const key = await keyWith('claude-first');
    const res = await fetch(`${gw.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key.secret}`, 'x-gateway-provider': '@team-openai' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] }),
    });
    expect(res.status).toBe(200);
    expect(openaiFake.count()).toBe(1);
    expect(anthropicFake.count()).toBe(0);
  });

  it('with x-gateway-api-key sent, Authorization keeps its meaning: the provider key', async () => {
    const client = new OpenAI({
      baseURL: gw.baseUrl,
      apiKey: 'sk-callers-own-provider-key',
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${openaiFake.url}/v1` },
    });
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] });
    expect(openaiFake.last()!.headers.authorization).toBe('Bearer sk-callers-own-provider-key');
  });

  it('a key without a default config and a request without a provider: 400 missing_provider', async () => {
    const key = await keyWith(undefined);
    const client = new OpenAI({ baseURL: gw.baseUrl, apiKey: key.secret, maxRetries: 0 });
    const err = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('missing_provider');
  });

  it('an unknown key in Authorization is a 401 that says where the key was read from', async () => {
    const res = await call(gw, 'GET', '/v1/configs', { key: null, headers: { authorization: 'Bearer sk-not-a-gateway-key' } });
    expect(res.status).toBe(401);
    expect(errorOf(res)).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
    expect(errorOf(res).message).toContain('authorization');
    const missing = await call(gw, 'GET', '/v1/configs', { key: null });
    expect(errorOf(missing).code).toBe('missing_api_key');
  });
});

describe('a gateway key default config: the admin API', () => {
  it('is shown on the key, changed and cleared with PUT, and applies to the next request', async () => {
    const key = await keyWith('claude-first');
    const shown = await call(gw, 'GET', `/v1/api-keys/${key.id}`);
    expect(shown.body.default_config).toBe('claude-first');

    const changed = await call(gw, 'PUT', `/v1/api-keys/${key.id}`, { body: { default_config: { provider: '@team-openai' } } });
    expect(changed.status, changed.text).toBe(200);
    expect(JSON.parse(changed.body.default_config)).toEqual({ provider: '@team-openai' });
    const client = new OpenAI({ baseURL: gw.baseUrl, apiKey: key.secret, maxRetries: 0 });
    await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] });
    expect(openaiFake.count()).toBe(1);
    expect(anthropicFake.count()).toBe(0);

    const cleared = await call(gw, 'PUT', `/v1/api-keys/${key.id}`, { body: { default_config: null, name: 'renamed' } });
    expect(cleared.body).toMatchObject({ default_config: null, name: 'renamed' });
    const err = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect((err as { status?: number }).status).toBe(400);
  });

  it('refuses a saved config that does not exist, an invalid inline config, unknown fields and a revoked key, naming the field', async () => {
    const unknown = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'x', default_config: 'no-such-config' } });
    expect(unknown.status).toBe(400);
    expect(errorOf(unknown)).toMatchObject({ param: 'default_config', code: 'config_not_found' });

    const invalid = await call(gw, 'POST', '/v1/api-keys', {
      body: { name: 'x', default_config: { strategy: { mode: 'sideways' }, targets: [{ provider: 'openai' }] } },
    });
    expect(invalid.status).toBe(400);
    expect(errorOf(invalid).param).toMatch(/^default_config\.strategy/);

    const key = await keyWith(undefined);
    const extra = await call(gw, 'PUT', `/v1/api-keys/${key.id}`, { body: { scopes: ['admin'] } });
    expect(extra.status).toBe(400);
    expect(errorOf(extra).param).toBe('scopes');

    expect((await call(gw, 'DELETE', `/v1/api-keys/${key.id}`)).status).toBe(200);
    const revoked = await call(gw, 'PUT', `/v1/api-keys/${key.id}`, { body: { name: 'again' } });
    expect(revoked.status).toBe(400);
    expect(errorOf(revoked).code).toBe('revoked_api_key');

    const missing = await call(gw, 'PUT', '/v1/api-keys/key_nope', { body: { name: 'again' } });
    expect(missing.status).toBe(404);
  });

  it('a saved default config deleted later gives a 400 that names default_config', async () => {
    const saved = await call(gw, 'POST', '/v1/configs', { body: { name: 'temp', slug: 'temp-config', config: { provider: '@team-openai' } } });
    expect(saved.status).toBe(200);
    const key = await keyWith('temp-config');
    expect((await call(gw, 'DELETE', '/v1/configs/temp-config')).status).toBe(200);
    const client = new OpenAI({ baseURL: gw.baseUrl, apiKey: key.secret, maxRetries: 0 });
    const err = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect((err as { status?: number }).status).toBe(400);
    expect((err as { param?: string }).param).toBe('default_config');
  });
});
