import { randomBytes } from 'node:crypto';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startAnthropicFake, type FakeServer } from '../fakes';
import { call, errorOf, logsOf, startTestGateway } from '../support/gateway';

/**
 * The function-URL front door (`-c frontDoor=function-url`): the local runtime hands the
 * functions what a Lambda function URL sends (payload format 2.0: rawPath, rawQueryString,
 * comma-joined headers, cookies apart, binary bodies in base64), and everything the API
 * Gateway front door gives must hold: routing by path to each group, authentication, the
 * request log, streamed answers, query strings, cookies both ways, binary uploads.
 */
let gw: LocalGateway;
let anthropic: FakeServer;

beforeAll(async () => {
  anthropic = await startAnthropicFake();
  gw = await startTestGateway({ frontDoor: 'function-url', env: { AUTH_CACHE_TTL_MS: '0' } });
  const created = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'claude', provider: 'anthropic', api_key: 'sk-ant-managed-secret', custom_host: `${anthropic.url}/v1` },
  });
  expect(created.status, created.text).toBe(200);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await anthropic?.close();
});

const client = (headers: Record<string, string> = {}) =>
  new OpenAI({
    baseURL: gw.baseUrl,
    apiKey: 'unused',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@claude', ...headers },
  });

describe('function URL events (payload format 2.0)', () => {
  it('answers a chat completion through a managed provider, and logs it under the caller trace id', async () => {
    const traceId = `furl-${Date.now()}`;
    const res = await client({ 'x-gateway-trace-id': traceId }).chat.completions.create({
      model: 'claude-sonnet-4-5-20250929',
      messages: [{ role: 'user', content: 'hello through a function url' }],
    });
    expect(res.object).toBe('chat.completion');
    expect(res.choices[0]!.message.content).toContain('hello through a function url');
    // The query string of a 2.0 event (rawQueryString) reaches the route.
    const logs = await logsOf(gw, `trace_id=${traceId}&limit=5`);
    expect(logs.status, logs.text).toBe(200);
    expect(logs.body.data).toHaveLength(1);
    expect(logs.body.data[0]).toMatchObject({ trace_id: traceId, status: 200 });
  });

  it('streams a translated answer as server-sent events', async () => {
    const stream = await client().chat.completions.create({
      model: 'claude-sonnet-4-5-20250929',
      messages: [{ role: 'user', content: 'stream me through the url' }],
      stream: true,
    });
    let text = '';
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta?.content ?? '';
    }
    expect(chunks).toBeGreaterThan(2);
    expect(text).toContain('stream me through the url');
  });

  it('refuses a request without a key in the OpenAI error shape, on every group', async () => {
    for (const path of ['/v1/chat/completions', '/v1/prompts', '/v1/api-keys']) {
      const res = await call(gw, 'GET', path, { key: null });
      expect(res.status, `${path}: ${res.text}`).toBe(401);
      expect(errorOf(res).type).toBe('authentication_error');
    }
  });

  it('routes by path to each endpoint group', async () => {
    const prompts = await call(gw, 'GET', '/v1/prompts');
    expect(prompts.status, prompts.text).toBe(200);
    expect(prompts.body.object).toBe('list');
    const keys = await call(gw, 'GET', '/v1/api-keys?limit=2');
    expect(keys.status, keys.text).toBe(200);
    expect(keys.body.data.length).toBeLessThanOrEqual(2);
    // A percent-encoded path arrives decoded, as API Gateway REST hands it over.
    const missing = await call(gw, 'GET', '/v1/prompts/no%20such%20prompt');
    expect(missing.status, missing.text).toBe(404);
    expect(errorOf(missing).message).toContain('no such prompt');
  });

  it('sends a Set-Cookie from the cookies list, and reads cookies back from theirs', async () => {
    const signIn = await call(gw, 'POST', '/console/session', { key: null, body: { api_key: gw.adminKey } });
    expect(signIn.status, signIn.text).toBe(200);
    const session = /^(gw_console=[^;]+)/.exec(signIn.headers.get('set-cookie') ?? '')?.[1];
    expect(session, signIn.headers.get('set-cookie') ?? '').toBeTruthy();
    const keys = await call(gw, 'GET', '/v1/api-keys', { key: null, headers: { cookie: `theme=dark; ${session}` } });
    expect(keys.status, keys.text).toBe(200);
  });

  it('takes a binary upload (a base64 body) byte for byte', async () => {
    const bytes = randomBytes(256 * 1024);
    const files = new OpenAI({ baseURL: gw.baseUrl, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': gw.adminKey } });
    const created = await files.files.create({ file: await toFile(bytes, 'blob.bin'), purpose: 'user_data' });
    expect(created.bytes).toBe(bytes.length);
    const content = await files.files.content(created.id);
    expect(Buffer.from(await content.arrayBuffer()).equals(bytes)).toBe(true);
  });
});
