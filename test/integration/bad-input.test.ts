import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, errorOf, startTestGateway } from '../support/gateway';

// Input a client should never send still gets a clear 4xx in the one error shape, never a
// 500: JSON nested thousands of levels deep (recursive code would run out of stack on it)
// and ids far longer than any the gateway makes (DynamoDB refuses keys over its limits).

let gw: LocalGateway;
let fake: FakeServer;
const managed = { 'x-gateway-provider': '@input-openai' };
/** A provider the Responses and Messages routes translate for (the fake never answers it: nothing may reach it). */
const anthropic = () => ({ 'x-gateway-provider': 'anthropic', 'x-gateway-custom-host': `${fake.url}/v1`, authorization: 'Bearer sk-ant' });

beforeAll(async () => {
  fake = await startOpenAIFake();
  gw = await startTestGateway();
  const created = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'input-openai', provider: 'openai', api_key: 'sk-input', custom_host: `${fake.url}/v1` },
  });
  expect(created.status, created.text).toBe(200);
});

afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

beforeEach(() => fake.reset());

/** `[[[…]]]` nested `depth` levels, as JSON text. */
const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
/** A chat body whose one message's content nests `depth` levels deeper than the body itself. */
const deepChat = (depth: number) => `{"model":"gpt-4o-mini","messages":[{"role":"user","content":${nested(depth)}}]}`;

describe('JSON nesting depth', () => {
  it('a 10,000-deep content answers 400 naming the limit on every route that reads a body, and reaches no provider', async () => {
    const deep = nested(10_000);
    const bodies: Array<[string, string, Record<string, string>]> = [
      ['/v1/chat/completions', deepChat(10_000), managed],
      ['/v1/chat/completions', `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":${deep}}]}`, managed],
      ['/v1/embeddings', `{"model":"text-embedding-3-small","input":${deep}}`, managed],
      ['/v1/responses', `{"model":"claude-x","input":${deep}}`, anthropic()],
      ['/v1/threads', `{"messages":[{"role":"user","content":${deep}}]}`, managed],
      ['/v1/prompts', `{"name":"deep","string":"hi","parameters":${deep}}`, {}],
      ['/v1/configs', `{"name":"deep","config":${deep}}`, {}],
    ];
    for (const [path, body, headers] of bodies) {
      const res = await call(gw, 'POST', path, { body, headers });
      expect(res.status, `${path}: ${res.text}`).toBe(400);
      expect(errorOf(res), path).toMatchObject({ type: 'invalid_request_error', code: 'json_too_deep' });
      expect(errorOf(res).message).toContain('128');
    }
    expect(fake.count()).toBe(0);
  });

  it('the Messages API (translated for an OpenAI provider) answers the same refusal in its own shape', async () => {
    const body = `{"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":${nested(10_000)}}]}`;
    const res = await call(gw, 'POST', '/v1/messages', { body, headers: managed });
    expect(res.status, res.text).toBe(400);
    expect(res.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(res.body.error.message).toContain('128');
  });

  it('the limit is 128 levels: 128 passes the depth check, 129 does not', async () => {
    // The chat body wraps content in 4 levels: {messages:[{content:…}]} -> content at depth 3.
    const atLimit = await call(gw, 'POST', '/v1/chat/completions', { body: deepChat(125), headers: managed });
    expect(atLimit.body?.error?.code, atLimit.text).not.toBe('json_too_deep');
    const over = await call(gw, 'POST', '/v1/chat/completions', { body: deepChat(126), headers: managed });
    expect(errorOf(over).code).toBe('json_too_deep');
  });

  it('brackets inside strings do not count, and a deep-ish JSON Schema (40 levels) is answered', async () => {
    let schema: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 20; i++) schema = { type: 'object', properties: { a: schema } };
    const res = await call(gw, 'POST', '/v1/chat/completions', {
      body: {
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: `${'['.repeat(500)} "\\"[[ ${'{'.repeat(500)}` }],
        response_format: { type: 'json_schema', json_schema: { name: 'deep', schema } },
      },
      headers: managed,
    });
    expect(res.status, res.text).toBe(200);
    expect(fake.count()).toBe(1);
  });

  it('an inline x-gateway-config nested past the limit is a 400 naming the header', async () => {
    const config = `${'{"targets":['.repeat(200)}{"provider":"openai"}${']}'.repeat(200)}`;
    const res = await call(gw, 'POST', '/v1/chat/completions', {
      body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
      headers: { 'x-gateway-config': config },
    });
    expect(res.status, res.text).toBe(400);
    expect(errorOf(res)).toMatchObject({ param: 'x-gateway-config', code: 'json_too_deep' });
  });

  it('a prompt template whose message array nests past the limit is a 400 naming `string`', async () => {
    const template = `[{"role":"user","content":[{"type":"text","text":"hi","x":${nested(5000)}}]}]`;
    const res = await call(gw, 'POST', '/v1/prompts', { body: { name: 'deep-template', string: template, parameters: {}, model: 'gpt-4o-mini' } });
    expect(res.status, res.text).toBe(400);
    expect(errorOf(res), res.text).toMatchObject({ param: 'string', code: 'json_too_deep' });
  });
});

describe('ids far longer than any the gateway makes', () => {
  const long = 'x'.repeat(2_000);
  const longPaths: Array<[string, string, unknown?]> = [
    ['GET', `/v1/threads/thread_${long}`],
    ['POST', `/v1/threads/thread_${long}`, {}],
    ['DELETE', `/v1/threads/thread_${long}`],
    ['GET', `/v1/threads/thread_${long}/messages`],
    ['POST', `/v1/threads/thread_${long}/messages`, { role: 'user', content: 'hi' }],
    ['GET', `/v1/threads/thread_x/runs/run_${long}`],
    ['POST', `/v1/threads/thread_x/runs/run_${long}/cancel`, {}],
    ['GET', `/v1/threads/thread_x/runs/run_x/steps/step_${long}`],
    ['GET', `/v1/assistants/asst_${long}`],
    ['DELETE', `/v1/assistants/asst_${long}`],
    ['GET', `/v1/prompts/${long}`],
    ['GET', `/v1/prompts/${long}/versions`],
    ['GET', `/v1/api-keys/key_${long}`],
    ['GET', `/v1/providers/${long}`],
    ['GET', `/v1/configs/${long}`],
    ['GET', `/v1/guardrails/${long}`],
    ['GET', `/v1/policies/rate-limits/${long}`],
    ['GET', `/v1/policies/budgets/${long}`],
    ['GET', `/v1/prices/${long}`],
    ['GET', `/v1/logs/log_${long}`],
    ['GET', `/v1/workspaces/${long}`],
    ['GET', `/v1/responses/resp_${long}`],
    ['GET', `/v1/fine_tuning/jobs/ftjob-${long}`],
    ['GET', `/v1/fine_tuning/jobs/ftjob-${long}/events`],
  ];

  it('a 2,000-character id in the path answers 404 in the error shape on every group', async () => {
    for (const [method, path, body] of longPaths) {
      const res = await call(gw, method, path, { body, headers: path.startsWith('/v1/threads') || path.startsWith('/v1/assistants') ? managed : {} });
      expect(res.status, `${method} ${path.slice(0, 60)}: ${res.text.slice(0, 300)}`).toBe(404);
      expect(errorOf(res).type).toBe('not_found_error');
    }
    expect(fake.count()).toBe(0);
  });

  it('an id of multi-byte characters is measured in bytes', async () => {
    const res = await call(gw, 'GET', `/v1/configs/${encodeURIComponent('é'.repeat(200))}`);
    expect(res.status, res.text).toBe(404);
    expect(errorOf(res).message).toContain('256 bytes');
  });

  it('a long id in a header, query or body field is a 4xx (or an empty list), never a 500', async () => {
    const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
    const thread = await call(gw, 'POST', '/v1/threads', { body: {}, headers: managed });
    expect(thread.status, thread.text).toBe(200);
    const cases: Array<[string, string, unknown, Record<string, string>]> = [
      ['POST', '/v1/chat/completions', chat, { 'x-gateway-provider': `@${long}` }],
      ['POST', '/v1/chat/completions', chat, { 'x-gateway-virtual-key': long }],
      ['POST', '/v1/chat/completions', chat, { 'x-gateway-config': long }],
      ['GET', `/v1/threads/${thread.body.id}/messages?after=msg_${long}`, undefined, managed],
      ['GET', `/v1/assistants?before=asst_${long}`, undefined, managed],
      ['GET', `/v1/logs?after=log_${long}`, undefined, {}],
      ['GET', `/v1/logs?trace_id=${long}`, undefined, {}],
      ['GET', `/v1/logs?metadata._user=${long}`, undefined, {}],
      ['GET', `/v1/api-keys?workspace_id=ws_${long}`, undefined, {}],
      ['GET', `/v1/prompts?after=${long}`, undefined, {}],
      ['GET', `/v1/analytics/spend?group_by=model&model=${long}`, undefined, {}],
      ['POST', `/v1/threads/${thread.body.id}/runs`, { assistant_id: `asst_${long}` }, managed],
      ['POST', '/v1/responses', { model: 'claude-x', input: 'hi', previous_response_id: `resp_${long}` }, anthropic()],
      ['POST', '/v1/api-keys', { name: 'k', default_config: long }, {}],
    ];
    for (const [method, path, body, headers] of cases) {
      const res = await call(gw, method, path, { body, headers });
      const where = `${method} ${path.slice(0, 60)} ${Object.keys(headers).join(',')}: ${res.text.slice(0, 300)}`;
      expect(res.status, where).toBeLessThan(500);
      // A lookup answers a 4xx in the error shape; a list filter may simply match nothing.
      if (res.status >= 400) errorOf(res);
      else expect(res.body.object, where).toBe('list');
    }
    expect(fake.count()).toBe(0);
  });

  it('an id of ordinary length is still looked up (404 because it does not exist)', async () => {
    const res = await call(gw, 'GET', '/v1/configs/no-such-config');
    expect(res.status).toBe(404);
    expect(errorOf(res).message).not.toContain('256 bytes');
  });
});
