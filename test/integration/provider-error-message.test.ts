import Anthropic, { APIError as AnthropicAPIError } from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, startWatsonxFake, type FakeServer } from '../fakes';
import { startTestGateway } from '../support/gateway';

// Issue 33, item 8b: a provider's error body in its own shape (watsonx's
// `{errors: [{code, message}], trace, status_code}`) reaches the caller as its message in
// every dialect, read by one extractor; an OpenAI-shaped error body passes unchanged.
let gw: LocalGateway;
let watsonx: FakeServer;
let openaiFake: FakeServer;

beforeAll(async () => {
  watsonx = await startWatsonxFake({ apiKey: 'ibm-key' });
  openaiFake = await startOpenAIFake();
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all([watsonx?.close(), openaiFake?.close()]);
});
beforeEach(() => {
  watsonx.reset();
  openaiFake.reset();
});

const WATSONX = () => ({
  'x-gateway-api-key': gw.adminKey,
  'x-gateway-provider': 'watsonx',
  authorization: 'Bearer ibm-key',
  'x-gateway-watsonx-project-id': 'proj-errors',
  'x-gateway-watsonx-iam-url': `${watsonx.url}/identity/token`,
  'x-gateway-custom-host': watsonx.url,
});
const MODEL = 'ibm/granite-3-8b-instruct';
const openai = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, defaultHeaders: WATSONX() });
const anthropic = () => new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0, defaultHeaders: WATSONX() });

const SENDERS: Array<[string, (stream: boolean) => Promise<unknown>]> = [
  ['chat', (stream) => openai().chat.completions.create({ model: MODEL, stream, messages: [{ role: 'user', content: 'hi' }] })],
  ['responses', (stream) => openai().responses.create({ model: MODEL, stream, input: 'hi' })],
  ['messages', (stream) => anthropic().messages.create({ model: MODEL, stream, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })],
];

describe.each(SENDERS)("%s on watsonx answering {errors:[...]}: the SDK's error carries watsonx's message", (route, send) => {
  it.each([false, true])('stream: %s', async (stream) => {
    watsonx.setBehaviour({ status: 400, message: 'Model granite-x is not supported in this region' });
    const err = await send(stream).catch((e: unknown) => e);
    const Expected = route === 'messages' ? AnthropicAPIError : OpenAI.APIError;
    expect(err).toBeInstanceOf(Expected);
    const apiError = err as InstanceType<typeof OpenAI.APIError>;
    expect(apiError.status).toBe(400);
    if (route === 'messages') {
      // The Anthropic SDK keeps the body: Anthropic's shape, watsonx's message in it.
      expect((err as AnthropicAPIError).error).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message: 'Model granite-x is not supported in this region' },
      });
    } else {
      expect(apiError.message).toBe('400 Model granite-x is not supported in this region');
    }
  });
});

it("chat: watsonx's 429 keeps its status, retry-after and message, in OpenAI's shape", async () => {
  watsonx.setBehaviour({ status: 429, message: 'watsonx quota used up', retryAfter: 2 });
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...WATSONX() },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }),
  });
  expect(res.status).toBe(429);
  expect(res.headers.get('retry-after')).toBe('2');
  const body = (await res.json()) as { error: Record<string, unknown> };
  expect(body.error).toMatchObject({ message: 'watsonx quota used up', type: 'rate_limit_error', param: null });
});

it('an OpenAI-shaped error body passes through unchanged', async () => {
  openaiFake.setBehaviour({ status: 400, message: 'Unsupported parameter: foo' });
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-gateway-api-key': gw.adminKey,
      'x-gateway-provider': 'openai',
      'x-gateway-custom-host': `${openaiFake.url}/v1`,
      authorization: 'Bearer sk-x',
    },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
  });
  expect(res.status).toBe(400);
  const text = await res.text();
  const upstream = openaiFake.last();
  expect(upstream).toBeDefined();
  expect(JSON.parse(text)).toMatchObject({ error: { message: 'Unsupported parameter: foo' } });
});
