import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, errorOf, startTestGateway } from '../support/gateway';

let gw: LocalGateway;
let fake: FakeServer;
let jwks: Server;
let privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
let configId: string;
let blockingConfigId: string;

beforeAll(async () => {
  const pair = await generateKeyPair('RS256');
  privateKey = pair.privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  jwks = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
  fake = await startOpenAIFake();
  gw = await startTestGateway();
  await call(gw, 'POST', '/v1/providers', { body: { slug: 'oa', provider: 'openai', api_key: 'sk-x', custom_host: `${fake.url}/v1` } });

  const jwt = await call(gw, 'POST', '/v1/guardrails', {
    body: {
      name: 'Signed-in users only',
      checks: [
        {
          id: 'default.jwt',
          parameters: {
            jwksUri: `http://127.0.0.1:${(jwks.address() as { port: number }).port}/jwks.json`,
            headerKey: 'x-user-token',
            algorithms: ['RS256'],
            cacheMaxAge: 300,
            clockTolerance: 5,
            maxTokenAge: '1h',
          },
        },
      ],
      actions: { onFail: 'block', message: 'A valid user token is required.' },
    },
  });
  expect(jwt.status).toBe(200);
  expect(jwt.body).toMatchObject({ id: expect.any(String), slug: 'signed-in-users-only', version_id: expect.any(String) });
  const pii = await call(gw, 'POST', '/v1/guardrails', {
    body: { name: 'No emails out', checks: [{ id: 'default.piiRegex', parameters: { categories: ['email'] } }], actions: { onFail: 'warn' } },
  });
  const piiBlock = await call(gw, 'POST', '/v1/guardrails', {
    body: { name: 'Never emails', checks: [{ id: 'default.piiRegex', parameters: { categories: ['email'] } }], actions: { onFail: 'block', deny: true } },
  });
  const saved = await call(gw, 'POST', '/v1/configs', {
    body: { name: 'guarded', config: { provider: '@oa', input_guardrails: [jwt.body.id], output_guardrails: [pii.body.slug] } },
  });
  expect(saved.status).toBe(200);
  configId = saved.body.id;
  const blocking = await call(gw, 'POST', '/v1/configs', {
    body: { name: 'strict', config: { provider: '@oa', input_guardrails: [jwt.body.id], output_guardrails: [piiBlock.body.id] } },
  });
  blockingConfigId = blocking.body.id;
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
  await new Promise((r) => jwks?.close(r));
});

const token = () => new SignJWT({ sub: 'user-1' }).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuedAt().setExpirationTime('10m').sign(privateKey);
const client = (config: string, headers: Record<string, string> = {}) =>
  new OpenAI({
    baseURL: gw.baseUrl,
    apiKey: 'unused',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-config': config, ...headers },
  });
const ask = (text: string) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: text }] });

describe('guardrails attached to a config', () => {
  it('blocks a request without a valid token with 446 and hook_results; the provider is not called', async () => {
    fake.reset();
    for (const headers of [{}, { 'x-user-token': 'not-a-jwt' }] as Array<Record<string, string>>) {
      const res = await call(gw, 'POST', '/v1/chat/completions', { headers: { 'x-gateway-config': configId, ...headers }, body: ask('hello') });
      expect(res.status).toBe(446);
      expect(errorOf(res)).toMatchObject({ type: 'guardrail_error', message: 'A valid user token is required.' });
      expect(res.body.hook_results[0]).toMatchObject({ verdict: false, deny: true });
    }
    expect(fake.count('/chat/completions')).toBe(0);
    const sdkError = await client(configId)
      .chat.completions.create(ask('x'))
      .catch((e: unknown) => e);
    expect(sdkError).toBeInstanceOf(OpenAI.APIError);
    expect((sdkError as InstanceType<typeof OpenAI.APIError>).status).toBe(446);
  });

  it('flags an answer with an email address (246 + hook_results), non-streamed', async () => {
    const { data, response } = await client(configId, { 'x-user-token': await token() })
      .chat.completions.create(ask('write to bob@example.com'))
      .withResponse();
    expect(response.status).toBe(246);
    expect(data.choices[0]!.message.content).toContain('bob@example.com');
    const hooks = (data as unknown as { hook_results: { before_request_hooks: any[]; after_request_hooks: any[] } }).hook_results;
    expect(hooks.before_request_hooks[0].verdict).toBe(true);
    expect(hooks.after_request_hooks[0]).toMatchObject({ verdict: false, deny: false });
  });

  it('passes (200, hook_results) when the answer is clean', async () => {
    const { data, response } = await client(configId, { 'x-user-token': await token() })
      .chat.completions.create(ask('nothing personal'))
      .withResponse();
    expect(response.status).toBe(200);
    expect((data as unknown as { hook_results: { after_request_hooks: any[] } }).hook_results.after_request_hooks[0].verdict).toBe(true);
  });

  it('flags an email in a streamed answer in a final chunk, after the text', async () => {
    const stream = await client(configId, { 'x-user-token': await token() }).chat.completions.create({ ...ask('mail alice@example.org'), stream: true });
    let text = '';
    let hooks: any;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if ((chunk as any).hook_results) hooks = (chunk as any).hook_results;
    }
    expect(text).toContain('alice@example.org');
    expect(hooks.after_request_hooks[0]).toMatchObject({ verdict: false });
  });

  it('a deny output guardrail withholds a non-streamed answer (446) and ends a stream with an error event', async () => {
    const headers = { 'x-user-token': await token() };
    const res = await call(gw, 'POST', '/v1/chat/completions', {
      headers: { 'x-gateway-config': blockingConfigId, ...headers },
      body: ask('mail carol@example.net'),
    });
    expect(res.status).toBe(446);
    expect(res.text).not.toContain('carol@example.net');
    const stream = await client(blockingConfigId, headers).chat.completions.create({ ...ask('mail carol@example.net'), stream: true });
    const failure = await (async () => {
      for await (const _ of stream) void _;
    })().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
  });

  it('records guardrail results in the request log', async () => {
    const traceId = `trace-guard-${Date.now()}`;
    await call(gw, 'POST', '/v1/chat/completions', { headers: { 'x-gateway-config': configId, 'x-gateway-trace-id': traceId }, body: ask('x') });
    let record: any;
    for (let i = 0; i < 50 && !record; i++) {
      record = (await call(gw, 'GET', `/v1/logs?trace_id=${traceId}`)).body.data[0];
      if (!record) await new Promise((r) => setTimeout(r, 50));
    }
    expect(record.status).toBe(446);
    expect(record.hook_results.before_request_hooks[0].verdict).toBe(false);
  });
});
