import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, startTestGateway } from '../support/gateway';

// Issue 33, item 8a: a tokens policy's admitted answers carry `x-ratelimit-*-tokens` (as
// OpenAI names them), streamed and not, on chat, Responses and Messages, as a requests
// policy's carry `x-ratelimit-limit|remaining|reset`.
let gw: LocalGateway;
let fake: FakeServer;
let key: string;
const LIMIT = 1_000_000;

beforeAll(async () => {
  fake = await startOpenAIFake();
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0' } });
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'token-headers' } });
  key = (await call(gw, 'POST', '/v1/api-keys', { body: { name: 'k', workspace_id: ws.body.id, scopes: ['admin', 'gateway'] } })).body.secret;
  const provider = await call(gw, 'POST', '/v1/providers', { key, body: { slug: 'oa', provider: 'openai', api_key: 'sk-x', custom_host: `${fake.url}/v1` } });
  expect(provider.status, provider.text).toBe(200);
  const policy = await call(gw, 'POST', '/v1/policies/rate-limits', {
    key,
    body: { conditions: [{ key: 'workspace_id', value: '*' }], group_by: [], type: 'tokens', unit: 'rpd', value: LIMIT },
  });
  expect(policy.status, policy.text).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

const openai = (provider: Record<string, string> = { 'x-gateway-provider': '@oa' }) =>
  new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': key, ...provider } });
// The fake has no Responses API: vLLM (OpenAI-shaped, without one) has the gateway translate.
const translatedResponses = () => openai({ 'x-gateway-provider': 'vllm', 'x-gateway-custom-host': `${fake.url}/v1`, authorization: 'Bearer sk-x' });
const anthropic = () =>
  new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': key, 'x-gateway-provider': '@oa' } });

function tokenHeaders(headers: Headers): { limit: number; remaining: number; reset: number } {
  expect(headers.get('x-ratelimit-limit'), 'no requests policy applies').toBeNull();
  return {
    limit: Number(headers.get('x-ratelimit-limit-tokens')),
    remaining: Number(headers.get('x-ratelimit-remaining-tokens')),
    reset: Number(headers.get('x-ratelimit-reset-tokens')),
  };
}

const ask = [{ role: 'user' as const, content: 'one two three' }];
type Sender = (stream: boolean) => Promise<Headers>;
const ROUTES: Array<[string, Sender]> = [
  [
    'chat',
    async (stream) => {
      const { response, data } = await openai().chat.completions.create({ model: 'gpt-4o-mini', messages: ask, stream }).withResponse();
      if (stream) for await (const _ of data as AsyncIterable<unknown>);
      return response.headers;
    },
  ],
  [
    'responses',
    async (stream) => {
      const { response, data } = await translatedResponses().responses.create({ model: 'gpt-4o-mini', input: 'one two three', stream }).withResponse();
      if (stream) for await (const _ of data as AsyncIterable<unknown>);
      return response.headers;
    },
  ],
  [
    'messages',
    async (stream) => {
      const { response, data } = await anthropic().messages.create({ model: 'gpt-4o-mini', max_tokens: 20, messages: ask, stream }).withResponse();
      if (stream) for await (const _ of data as AsyncIterable<unknown>);
      return response.headers;
    },
  ],
];

describe.each(ROUTES)('%s, admitted under a tokens policy', (_route, send) => {
  it.each([false, true])('stream: %s: x-ratelimit-limit|remaining|reset-tokens', async (stream) => {
    const first = tokenHeaders(await send(stream));
    expect(first.limit).toBe(LIMIT);
    expect(first.remaining).toBeGreaterThan(0);
    expect(first.remaining).toBeLessThanOrEqual(LIMIT);
    expect(first.reset).toBeGreaterThan(0);
    expect(first.reset).toBeLessThanOrEqual(86_400);
    // The usage is added once each answer has ended: a later answer reports less left.
    let later = first;
    for (let i = 0; i < 40 && later.remaining >= first.remaining; i++) {
      await new Promise((r) => setTimeout(r, 50));
      later = tokenHeaders(await send(false));
    }
    expect(later.remaining).toBeLessThan(first.remaining);
  });
});
