import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { startChildGateway } from '../support/child-gateway';
import { call, errorOf, startTestGateway } from '../support/gateway';

let gw: LocalGateway;
let child: { url: string; stop: () => Promise<void> };
let fake: FakeServer;

beforeAll(async () => {
  fake = await startOpenAIFake();
  gw = await startTestGateway();
  child = await startChildGateway(gw);
  const provider = await call(gw, 'POST', '/v1/providers', { body: { slug: 'oa', provider: 'openai', api_key: 'sk-x', custom_host: `${fake.url}/v1` } });
  expect(provider.status).toBe(200);
});
afterAll(async () => {
  await child?.stop();
  await gw?.stop();
  await fake?.close();
});

function chatFrom(baseUrl: string, user: string) {
  return fetch(`${baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': gw.adminKey,
      'x-gateway-provider': '@oa',
      'x-gateway-metadata': JSON.stringify({ _user: user }),
    },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  });
}

describe('rate-limit policies enforced on the inference routes', () => {
  it('10 requests per minute per metadata._user admits exactly 10 of 30 concurrent requests from two gateway processes', { timeout: 90_000 }, async () => {
    const policy = await call(gw, 'POST', '/v1/policies/rate-limits', {
      body: { name: 'per user', conditions: [], group_by: [{ key: 'metadata._user' }], type: 'requests', unit: 'rpm', value: 10 },
    });
    expect(policy.status).toBe(200);
    fake.reset();
    // The policy counts per fixed minute: keep the burst inside one window.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 45_000) await new Promise((r) => setTimeout(r, 60_000 - intoMinute + 500));
    const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => chatFrom(i % 2 ? child.url : gw.url, 'alice')));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    // The provider was never called for a refused request.
    expect(fake.count('/chat/completions')).toBe(10);
    const refused = responses.find((r) => r.status === 429)!;
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get('x-ratelimit-limit')).toBe('10');
    const body = (await refused.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe('rate_limit_error');
    expect(body.error.message).toContain(policy.body.id);
    // Another user has a bucket of their own.
    const bob = await chatFrom(child.url, 'bob');
    expect(bob.status).toBe(200);
    expect(bob.headers.get('x-ratelimit-remaining')).toBe('9');
    // The SDK sees a typed error.
    const client = new OpenAI({
      baseURL: gw.baseUrl,
      apiKey: 'unused',
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@oa', 'x-gateway-metadata': '{"_user":"alice"}' },
    });
    const err = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    await call(gw, 'DELETE', `/v1/policies/rate-limits/${policy.body.id}`);
  });

  it('a fractional requests value admits its whole part per window: 2.5 rpm admits exactly 2 of 5', async () => {
    const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'fractional-ws' } });
    const key = (await call(gw, 'POST', '/v1/api-keys', { body: { name: 'k', workspace_id: ws.body.id, scopes: ['admin', 'gateway'] } })).body.secret;
    await call(gw, 'POST', '/v1/providers', { key, body: { slug: 'oa', provider: 'openai', api_key: 'sk-x', custom_host: `${fake.url}/v1` } });
    const policy = await call(gw, 'POST', '/v1/policies/rate-limits', { key, body: { type: 'requests', unit: 'rpm', value: 2.5 } });
    expect(policy.status).toBe(200);
    expect(policy.body.value).toBe(2.5);
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 50_000) await new Promise((r) => setTimeout(r, 60_000 - intoMinute + 500));
    const responses = await Promise.all(
      Array.from({ length: 5 }, () =>
        fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-gateway-api-key': key, 'x-gateway-provider': '@oa' },
          body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
        }),
      ),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(2);
    expect(statuses.filter((s) => s === 429)).toHaveLength(3);
    expect(responses.find((r) => r.status === 429)!.headers.get('x-ratelimit-limit')).toBe('2');
  });

  it('a tokens policy counts streamed and non-streamed usage, then refuses', async () => {
    // A fresh workspace, so the request policy above cannot interfere.
    const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'tokens-ws' } });
    const key = (await call(gw, 'POST', '/v1/api-keys', { body: { name: 'k', workspace_id: ws.body.id, scopes: ['admin', 'gateway'] } })).body.secret;
    await call(gw, 'POST', '/v1/providers', { key, body: { slug: 'oa', provider: 'openai', api_key: 'sk-x', custom_host: `${fake.url}/v1` } });
    await call(gw, 'POST', '/v1/policies/rate-limits', {
      key,
      body: { conditions: [{ key: 'model', value: 'gpt-4o-mini' }], group_by: [], type: 'tokens', unit: 'rpd', value: 12 },
    });
    const client = new OpenAI({
      baseURL: gw.baseUrl,
      apiKey: 'unused',
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-api-key': key, 'x-gateway-provider': '@oa' },
    });
    const first = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'one two three four' }] });
    expect(first.usage!.total_tokens).toBeGreaterThan(0);
    expect(first.usage!.total_tokens).toBeLessThan(12);
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'five six seven eight' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let streamed = 0;
    for await (const chunk of stream) streamed += chunk.usage?.total_tokens ?? 0;
    expect(first.usage!.total_tokens + streamed).toBeGreaterThanOrEqual(12);
    // Usage is recorded after each response; poll until the window is spent.
    let status = 200;
    for (let i = 0; i < 40 && status === 200; i++) {
      const res = await call(gw, 'POST', '/v1/chat/completions', {
        key,
        headers: { 'x-gateway-provider': '@oa' },
        body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'more' }] },
      });
      status = res.status;
      if (status === 429) expect(errorOf(res).type).toBe('rate_limit_error');
      else await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe(429);
    // Another model is not covered by the policy's condition.
    const other = await call(gw, 'POST', '/v1/chat/completions', {
      key,
      headers: { 'x-gateway-provider': '@oa' },
      body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] },
    });
    expect(other.status).toBe(200);
  });
});
