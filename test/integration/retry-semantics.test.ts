import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { startFaultyUpstream, type FaultyUpstream } from '../fakes/faulty-upstream';
import { call, errorOf, startTestGateway, type CallResult } from '../support/gateway';

// Issue 33, item 6: the OpenAI and Anthropic SDKs retry 408, 409, 429 and every 5xx unless
// the answer says `x-should-retry: false`. A refusal no retry can fix must not be retried:
// the active-run refusal is OpenAI's 400; the other final errors say `x-should-retry: false`.
let gw: LocalGateway;
let fake: FakeServer;
let faulty: FaultyUpstream;

beforeAll(async () => {
  fake = await startOpenAIFake();
  faulty = await startFaultyUpstream();
  gw = await startTestGateway({ workflowMaxWaitMs: 50, env: { AUTH_CACHE_TTL_MS: '0' } });
  const created = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'retry-openai', provider: 'openai', api_key: 'sk-managed', custom_host: `${fake.url}/v1` },
  });
  expect(created.status, created.text).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all([fake?.close(), faulty?.close()]);
});

const assistantsHeaders = { 'x-gateway-provider': '@retry-openai', 'openai-beta': 'assistants=v2' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a new run on a thread with an active run', () => {
  it('the openai SDK, default retries: BadRequestError at once, one HTTP call; the provider sees one run only', async () => {
    let calls = 0;
    const sdk = new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: 'unused',
      defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@retry-openai' },
      fetch: (url, init) => {
        calls++;
        return fetch(url, init);
      },
    });
    // The first run's model call takes 1.5 s: long enough for the SDK's retries of a 409 to outlive it.
    fake.setBehaviour({ latencyMs: 1500 });
    try {
      const assistant = await sdk.beta.assistants.create({ model: 'gpt-4o-mini' });
      const thread = await sdk.beta.threads.create({ messages: [{ role: 'user', content: 'Hello' }] });
      const first = await sdk.beta.threads.runs.create(thread.id, { assistant_id: assistant.id });
      calls = 0;
      const refused = await sdk.beta.threads.runs.create(thread.id, { assistant_id: assistant.id }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
      expect((refused as InstanceType<typeof OpenAI.BadRequestError>).message).toContain(`Thread ${thread.id} already has an active run ${first.id}.`);
      expect(calls).toBe(1);

      const done = await sdk.beta.threads.runs.poll(first.id, { thread_id: thread.id }, { pollIntervalMs: 50 });
      expect(done.status).toBe('completed');
      await sleep(300);
      const runs = await sdk.beta.threads.runs.list(thread.id);
      expect(runs.data.map((r) => r.id)).toEqual([first.id]);
      expect(fake.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(1);
    } finally {
      fake.reset();
    }
  });
});

const final = (res: CallResult) => res.headers.get('x-should-retry');

describe('every final error says so; a retryable one does not', () => {
  it.each([
    [
      'a workspace slug that is taken: 409 slug_taken',
      async () => {
        await call(gw, 'POST', '/v1/workspaces', { body: { name: 'Retry Dup' } });
        return call(gw, 'POST', '/v1/workspaces', { body: { name: 'retry dup' } });
      },
      409,
      'slug_taken',
    ],
    [
      'a provider slug that is taken: 409 slug_taken',
      () => call(gw, 'POST', '/v1/providers', { body: { slug: 'retry-openai', provider: 'openai', api_key: 'sk-x' } }),
      409,
      'slug_taken',
    ],
    [
      'a price override that exists: 409 price_override_exists',
      async () => {
        const body = { provider: 'openai', model: 'retry-priced', input_per_mtok: 1 };
        await call(gw, 'POST', '/v1/prices', { body });
        return call(gw, 'POST', '/v1/prices', { body });
      },
      409,
      'price_override_exists',
    ],
    [
      'a provider body past the size limit: 502 upstream_response_too_large',
      () => {
        faulty.configure({ hugeBodyBytes: 21 * 1024 * 1024 });
        return call(gw, 'POST', '/v1/chat/completions', {
          headers: { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${faulty.url}/v1`, authorization: 'Bearer sk-x' },
          body: { model: 'fault-huge-body', messages: [{ role: 'user', content: 'hi' }] },
        });
      },
      502,
      'upstream_response_too_large',
    ],
  ] as const)('%s, x-should-retry: false', async (_name, send, status, code) => {
    const res = await send();
    expect(res.status, res.text).toBe(status);
    expect(errorOf(res).code).toBe(code);
    expect(final(res)).toBe('false');
  });

  it('a run that is finished: cancel and submit_tool_outputs are 400s, as on OpenAI', async () => {
    const assistant = await call(gw, 'POST', '/v1/assistants', { headers: assistantsHeaders, body: { model: 'gpt-4o-mini' } });
    const thread = await call(gw, 'POST', '/v1/threads', { headers: assistantsHeaders, body: { messages: [{ role: 'user', content: 'Hi' }] } });
    const run = await call(gw, 'POST', `/v1/threads/${thread.body.id}/runs`, { headers: assistantsHeaders, body: { assistant_id: assistant.body.id } });
    expect(run.status, run.text).toBe(200);
    let status = run.body.status as string;
    for (let i = 0; i < 200 && status !== 'completed'; i++) {
      await sleep(25);
      status = (await call(gw, 'GET', `/v1/threads/${thread.body.id}/runs/${run.body.id}`, { headers: assistantsHeaders })).body.status;
    }
    expect(status).toBe('completed');
    const base = `/v1/threads/${thread.body.id}/runs/${run.body.id}`;
    const cancel = await call(gw, 'POST', `${base}/cancel`, { headers: assistantsHeaders });
    expect(cancel.status, cancel.text).toBe(400);
    expect(errorOf(cancel)).toMatchObject({ type: 'invalid_request_error', code: 'run_not_cancellable' });
    const submit = await call(gw, 'POST', `${base}/submit_tool_outputs`, {
      headers: assistantsHeaders,
      body: { tool_outputs: [{ tool_call_id: 'call_1', output: 'x' }] },
    });
    expect(submit.status, submit.text).toBe(400);
    expect(errorOf(submit).code).toBe('run_not_requires_action');
  });

  it('an unreachable provider (502 upstream_unreachable) stays retryable: no x-should-retry: false', async () => {
    const res = await call(gw, 'POST', '/v1/chat/completions', {
      headers: { 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${faulty.refusedUrl}/v1`, authorization: 'Bearer sk-x' },
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(res.status).toBe(502);
    expect(errorOf(res).code).toBe('upstream_unreachable');
    expect(final(res)).toBeNull();
  });
});
