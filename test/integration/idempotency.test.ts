import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient, GetItemCommand, PutItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startAnthropicFake, startOpenAIFake, type FakeServer } from '../fakes';
import { startJinaFake } from '../fakes/rerank';
import { startChildGateway } from '../support/child-gateway';
import { call, errorOf, logsOf, startTestGateway, type CallOptions } from '../support/gateway';

// Idempotency-Key through HTTP against the local runtime, with fake providers that count the
// calls they get (a second billed call shows there). No functions/ module is imported
// statically: the gateway sets the environment before the handlers load.

let gw: LocalGateway;
let openaiFake: FakeServer;
let anthropicFake: FakeServer;
let ddb: DynamoDBClient;
/** A second workspace's key, and a second key of the bootstrap workspace. */
let otherWorkspace: { id: string; key: string };
let secondKey: string;
const PROVIDER_KEY = 'sk-idempotency-provider-key';
const LEASE_MS = 3000;
const TABLE = () => `${process.env.GATEWAY_TEST_TABLE_PREFIX}idempotency`;

beforeAll(async () => {
  [openaiFake, anthropicFake] = await Promise.all([startOpenAIFake(), startAnthropicFake()]);
  gw = await startTestGateway({ env: { IDEMPOTENCY_LEASE_MS: String(LEASE_MS) } });
  ddb = new DynamoDBClient({ endpoint: gw.dynamodbEndpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  const provider = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'idem-openai', provider: 'openai', api_key: PROVIDER_KEY, custom_host: `${openaiFake.url}/v1` },
  });
  expect(provider.status).toBe(200);
  const claude = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'idem-claude', provider: 'anthropic', api_key: 'sk-ant-idem', custom_host: `${anthropicFake.url}/v1` },
  });
  expect(claude.status).toBe(200);
  const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'Idempotency other team' } });
  const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'other', workspace_id: ws.body.id, scopes: ['admin', 'gateway'] } });
  otherWorkspace = { id: ws.body.id, key: key.body.secret };
  for (const slug of ['idem-openai']) {
    const created = await call(gw, 'POST', '/v1/providers', {
      key: otherWorkspace.key,
      body: { slug, provider: 'openai', api_key: PROVIDER_KEY, custom_host: `${openaiFake.url}/v1` },
    });
    expect(created.status).toBe(200);
  }
  secondKey = (await call(gw, 'POST', '/v1/api-keys', { body: { name: 'second', scopes: ['admin', 'gateway'] } })).body.secret;
});
afterAll(async () => {
  ddb?.destroy();
  await gw?.stop();
  await Promise.all([openaiFake?.close(), anthropicFake?.close()]);
});
beforeEach(() => {
  openaiFake.reset();
  anthropicFake.reset();
});

let seq = 0;
const newKey = () => `idem-test-${Date.now()}-${++seq}`;

const chatHeaders = { 'x-gateway-provider': '@idem-openai' };
const chatBody = (content = 'hello there', extra: Record<string, unknown> = {}) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], ...extra });
const chat = (key: string | undefined, body: unknown = chatBody(), opts: CallOptions = {}) =>
  call(gw, 'POST', '/v1/chat/completions', {
    ...opts,
    body,
    headers: { ...chatHeaders, ...(key ? { 'idempotency-key': key } : {}), ...opts.headers },
  });
const createThread = (key: string | undefined, body: unknown = {}, opts: CallOptions = {}) =>
  call(gw, 'POST', '/v1/threads', { ...opts, body, headers: { ...chatHeaders, ...(key ? { 'idempotency-key': key } : {}), ...opts.headers } });
const chatCalls = () => openaiFake.count('/chat/completions');

async function itemCount(): Promise<number> {
  const out = await ddb.send(new ScanCommand({ TableName: TABLE(), Select: 'COUNT', ConsistentRead: true }));
  return out.Count ?? 0;
}

describe('replay of the first answer', () => {
  it('a request without Idempotency-Key stores nothing: every request runs', async () => {
    const before = await itemCount();
    const [a, b] = [await chat(undefined), await chat(undefined)];
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.id).not.toBe(b.body.id);
    expect(chatCalls()).toBe(2);
    expect(a.headers.get('x-gateway-idempotent-replay')).toBeNull();
    expect(await itemCount()).toBe(before);
  });

  it('chat: the same key and body answer the first completion again, with one upstream call', async () => {
    const key = newKey();
    const first = await chat(key);
    const second = await chat(key);
    expect(first.status).toBe(200);
    expect(first.headers.get('x-gateway-idempotent-replay')).toBeNull();
    expect(second.status).toBe(200);
    expect(second.headers.get('x-gateway-idempotent-replay')).toBe('true');
    expect(second.text).toBe(first.text);
    expect(second.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(second.headers.get('x-gateway-provider')).toBe('openai');
    expect(second.headers.get('x-gateway-trace-id')).not.toBe(first.headers.get('x-gateway-trace-id'));
    expect(chatCalls()).toBe(1);
    // The replay is logged, without a provider or a cost (nothing was called or charged).
    const logs = await logsOf(gw, `trace_id=${second.headers.get('x-gateway-trace-id')}`);
    expect(logs.body.data).toHaveLength(1);
    expect(logs.body.data[0]).toMatchObject({ status: 200, provider: null, cost_usd: null });
  });

  it('threads: a retry returns the same thread instead of creating a second one', async () => {
    const key = newKey();
    const first = await createThread(key, { metadata: { purpose: 'idem' } });
    const second = await createThread(key, { metadata: { purpose: 'idem' } });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.body.id).toBe(first.body.id);
    expect(second.headers.get('x-gateway-idempotent-replay')).toBe('true');
  });

  it('every creating route honours the key: a replay answers the first object', async () => {
    const assistant = await call(gw, 'POST', '/v1/assistants', { body: { model: 'gpt-4o-mini' }, headers: chatHeaders });
    const thread = await createThread(undefined);
    const cases: Array<[string, unknown, Record<string, string>?]> = [
      ['/v1/assistants', { model: 'gpt-4o-mini', name: 'idem' }, chatHeaders],
      [`/v1/threads/${thread.body.id}/messages`, { role: 'user', content: 'hi' }, chatHeaders],
      ['/v1/configs', { name: `idem config ${seq}`, config: { provider: 'openai' } }],
      [
        '/v1/guardrails',
        { name: `idem guardrail ${seq}`, checks: [{ id: 'default.wordCount', parameters: { minWords: 1, maxWords: 99 } }], actions: { onFail: 'warn' } },
      ],
      ['/v1/api-keys', { name: 'idem key', scopes: ['gateway'] }],
      [
        '/v1/prompts',
        { name: `idem prompt ${seq}`, string: 'Hello {{name}}', parameters: { temperature: 0.5 }, model: 'gpt-4o-mini', virtual_key: 'idem-openai' },
      ],
      ['/v1/policies/budgets', { type: 'budget', limit_usd: 5, period: 'day' }],
    ];
    expect(assistant.status).toBe(200);
    for (const [path, body, headers] of cases) {
      const key = newKey();
      const first = await call(gw, 'POST', path, { body, headers: { ...headers, 'idempotency-key': key } });
      const second = await call(gw, 'POST', path, { body, headers: { ...headers, 'idempotency-key': key } });
      expect(first.status, `${path}: ${first.text}`).toBeLessThan(300);
      expect(second.status, path).toBe(first.status);
      expect(second.headers.get('x-gateway-idempotent-replay'), path).toBe('true');
      expect(second.text, path).toBe(first.text);
    }
  });

  it('the creating admin routes honour it too: providers, workspaces, prices', async () => {
    const cases: Array<[string, unknown]> = [
      ['/v1/providers', { slug: `idem-p-${seq}`, provider: 'openai', api_key: 'sk-x', custom_host: `${openaiFake.url}/v1` }],
      ['/v1/workspaces', { name: `Idempotent team ${seq}` }],
      ['/v1/prices', { provider: 'openai', model: `idem-model-${seq}`, per_request: 0.001 }],
    ];
    for (const [path, body] of cases) {
      const key = newKey();
      const first = await call(gw, 'POST', path, { body, headers: { 'idempotency-key': key } });
      const second = await call(gw, 'POST', path, { body, headers: { 'idempotency-key': key } });
      expect(first.status, `${path}: ${first.text}`).toBe(200);
      expect(second.headers.get('x-gateway-idempotent-replay'), path).toBe('true');
      expect(second.text, path).toBe(first.text);
    }
  });

  it('model calls, runs and jobs: embeddings, Responses, prompt completions, rerank, runs, thread-and-run and fine-tuning jobs run once', async () => {
    const once = async (path: string, body: unknown, headers: Record<string, string> = chatHeaders) => {
      const key = newKey();
      const first = await call(gw, 'POST', path, { body, headers: { ...headers, 'idempotency-key': key } });
      const second = await call(gw, 'POST', path, { body, headers: { ...headers, 'idempotency-key': key } });
      expect(first.status, `${path}: ${first.text}`).toBe(200);
      expect(second.headers.get('x-gateway-idempotent-replay'), path).toBe('true');
      expect(second.text, path).toBe(first.text);
      return first.body;
    };
    await once('/v1/embeddings', { model: 'text-embedding-3-small', input: 'embed me once' });
    expect(openaiFake.count('/embeddings')).toBe(1);
    await once('/v1/responses', { model: 'gpt-4o-mini', input: 'respond once' });
    expect(openaiFake.count('/responses')).toBe(1);
    const prompt = await call(gw, 'POST', '/v1/prompts', {
      body: { name: `idem completion ${seq}`, string: 'Hello {{name}}', parameters: {}, model: 'gpt-4o-mini', virtual_key: 'idem-openai' },
    });
    expect(prompt.status, prompt.text).toBe(200);
    await once(`/v1/prompts/${prompt.body.id}/completions`, { variables: { name: 'Ada' } }, {});
    expect(chatCalls()).toBe(1);
    const assistant = await call(gw, 'POST', '/v1/assistants', { body: { model: 'gpt-4o-mini' }, headers: chatHeaders });
    const thread = await createThread(undefined);
    const run = await once(`/v1/threads/${thread.body.id}/runs`, { assistant_id: assistant.body.id });
    expect(run.object).toBe('thread.run');
    const threadAndRun = await once('/v1/threads/runs', { assistant_id: assistant.body.id, thread: { messages: [{ role: 'user', content: 'hi' }] } });
    expect(threadAndRun.object).toBe('thread.run');
    const job = await once('/v1/fine_tuning/jobs', { model: 'gpt-4o-mini-2024-07-18', training_file: 'file-idem' });
    expect(job.object).toBe('fine_tuning.job');
    const jina = await startJinaFake();
    try {
      const rerankHeaders = { 'x-gateway-provider': 'jina', 'x-gateway-custom-host': `${jina.url}/v1`, authorization: 'Bearer jina-key' };
      await once('/v1/rerank', { model: 'jina-reranker-v2-base-multilingual', query: 'cats', documents: ['dogs', 'cats'] }, rerankHeaders);
      expect(jina.count('/rerank')).toBe(1);
    } finally {
      await jina.close();
    }
  });

  it('a 4xx answer is replayed too (the request ran and was refused); a replayed error keeps its shape', async () => {
    const key = newKey();
    const first = await createThread(key, { messages: 'not a list' });
    const second = await createThread(key, { messages: 'not a list' });
    expect(first.status).toBe(400);
    expect(second.status).toBe(400);
    expect(errorOf(second)).toEqual(errorOf(first));
    expect(second.headers.get('x-gateway-idempotent-replay')).toBe('true');
  });

  it('a streamed chat answer is replayed byte for byte, with one upstream call', async () => {
    const key = newKey();
    const body = chatBody('stream this please', { stream: true });
    const first = await chat(key, body);
    const second = await chat(key, body);
    expect(first.status).toBe(200);
    expect(first.text).toContain('data: [DONE]');
    expect(second.headers.get('content-type')).toContain('text/event-stream');
    expect(second.headers.get('x-gateway-idempotent-replay')).toBe('true');
    expect(second.text).toBe(first.text);
    expect(chatCalls()).toBe(1);
  });

  it('a streamed run is replayed as the same events, and runs once', async () => {
    const assistant = await call(gw, 'POST', '/v1/assistants', { body: { model: 'gpt-4o-mini' }, headers: chatHeaders });
    const thread = await createThread(undefined, { messages: [{ role: 'user', content: 'stream a run' }] });
    const key = newKey();
    const path = `/v1/threads/${thread.body.id}/runs`;
    const runBody = { assistant_id: assistant.body.id, stream: true };
    const first = await call(gw, 'POST', path, { body: runBody, headers: { ...chatHeaders, 'idempotency-key': key } });
    const second = await call(gw, 'POST', path, { body: runBody, headers: { ...chatHeaders, 'idempotency-key': key } });
    expect(first.status).toBe(200);
    expect(first.text).toContain('event: thread.run.completed');
    expect(second.headers.get('x-gateway-idempotent-replay')).toBe('true');
    expect(second.text).toBe(first.text);
    expect(chatCalls()).toBe(1);
  });

  it('a large answer is stored compressed and replayed whole', async () => {
    const key = newKey();
    const words = Array.from({ length: 90_000 }, (_, i) => `w${i % 500}`).join(' ');
    const first = await chat(key, chatBody(words));
    const second = await chat(key, chatBody(words));
    expect(first.text.length).toBeGreaterThan(300_000);
    expect(second.headers.get('x-gateway-idempotent-replay')).toBe('true');
    expect(second.text).toBe(first.text);
    expect(chatCalls()).toBe(1);
  });

  it('an answer too large to store still guards the key: the retry is told it cannot be replayed and nothing runs twice', async () => {
    const key = newKey();
    // Random text does not compress below the stored-body cap.
    const noise = Buffer.from(Array.from({ length: 900_000 }, () => Math.floor(Math.random() * 256))).toString('base64');
    const first = await chat(key, chatBody(noise));
    const second = await chat(key, chatBody(noise));
    expect(first.status).toBe(200);
    expect(second.status).toBe(409);
    expect(errorOf(second)).toMatchObject({ type: 'conflict_error', code: 'idempotency_replay_unavailable', param: 'Idempotency-Key' });
    expect(second.headers.get('x-should-retry')).toBe('false');
    expect(chatCalls()).toBe(1);
  });
});

describe('conflicts', () => {
  it('the same key with another body is a 422 and runs nothing', async () => {
    const key = newKey();
    expect((await chat(key, chatBody('first question'))).status).toBe(200);
    const other = await chat(key, chatBody('another question'));
    expect(other.status).toBe(422);
    expect(errorOf(other)).toMatchObject({ type: 'invalid_request_error', code: 'idempotency_key_reused', param: 'Idempotency-Key' });
    expect(chatCalls()).toBe(1);
    // Another path under the same key is another request too.
    const thread = await createThread(key);
    expect(thread.status).toBe(422);
  });

  it("Messages answers the conflict in Anthropic's error shape", async () => {
    const key = newKey();
    const body = { model: 'claude-3-5-haiku-latest', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] };
    const headers = { 'x-gateway-provider': '@idem-claude', 'idempotency-key': key };
    const first = await call(gw, 'POST', '/v1/messages', { body, headers });
    expect(first.status, first.text).toBe(200);
    const replayed = await call(gw, 'POST', '/v1/messages', { body, headers });
    expect(replayed.text).toBe(first.text);
    const other = await call(gw, 'POST', '/v1/messages', { body: { ...body, max_tokens: 60 }, headers });
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(anthropicFake.count('/messages')).toBe(1);
  });

  it('while the first request runs, a retry gets 409 with x-should-retry; of concurrent requests with one key exactly one runs', async () => {
    openaiFake.setBehaviour({ latencyMs: 1_000 });
    const key = newKey();
    const results = await Promise.all(Array.from({ length: 6 }, () => chat(key)));
    const ran = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 409);
    expect(ran).toHaveLength(1);
    expect(refused).toHaveLength(5);
    for (const r of refused) {
      expect(errorOf(r)).toMatchObject({ type: 'conflict_error', code: 'idempotency_key_in_use' });
      expect(r.headers.get('x-should-retry')).toBe('true');
    }
    expect(chatCalls()).toBe(1);
    const after = await chat(key);
    expect(after.headers.get('x-gateway-idempotent-replay')).toBe('true');
    expect(after.text).toBe(ran[0]!.text);
  });

  it('a request that runs longer than the lease keeps its key (the lease is renewed)', async () => {
    openaiFake.setBehaviour({ latencyMs: LEASE_MS * 2 });
    const key = newKey();
    const first = chat(key);
    await new Promise((r) => setTimeout(r, LEASE_MS * 1.5));
    const retry = await chat(key);
    expect(retry.status).toBe(409);
    expect((await first).status).toBe(200);
    expect(chatCalls()).toBe(1);
  });

  it('an invalid key is a 400 naming the header', async () => {
    const res = await chat('x'.repeat(256));
    expect(res.status).toBe(400);
    expect(errorOf(res)).toMatchObject({ param: 'Idempotency-Key', code: 'invalid_idempotency_key' });
    expect(chatCalls()).toBe(0);
  });
});

describe('failures free the key', () => {
  it('a 5xx answer is not stored: the retry runs again', async () => {
    openaiFake.setBehaviour({ status: 500, times: 1 });
    const key = newKey();
    const first = await chat(key);
    expect(first.status).toBeGreaterThanOrEqual(500);
    const second = await chat(key);
    expect(second.status).toBe(200);
    expect(second.headers.get('x-gateway-idempotent-replay')).toBeNull();
    expect(chatCalls()).toBe(2);
    const third = await chat(key);
    expect(third.headers.get('x-gateway-idempotent-replay')).toBe('true');
    expect(chatCalls()).toBe(2);
  });

  it('a 429 is not stored either', async () => {
    openaiFake.setBehaviour({ status: 429, times: 1 });
    const key = newKey();
    expect((await chat(key)).status).toBe(429);
    const second = await chat(key);
    expect(second.status).toBe(200);
    expect(chatCalls()).toBe(2);
    // The success is what the key keeps.
    expect((await chat(key)).text).toBe(second.text);
    expect(chatCalls()).toBe(2);
  });

  it('a stream that ends with an error event is not stored: the retry runs again', async () => {
    openaiFake.setBehaviour({ streamError: true, times: 1 });
    const key = newKey();
    const body = chatBody('stream then fail', { stream: true });
    const first = await chat(key, body);
    expect(first.text).toContain('"error"');
    openaiFake.setBehaviour({ streamError: undefined });
    const second = await chat(key, body);
    expect(second.headers.get('x-gateway-idempotent-replay')).toBeNull();
    expect(second.text).toContain('data: [DONE]');
    expect(chatCalls()).toBe(2);
    const third = await chat(key, body);
    expect(third.headers.get('x-gateway-idempotent-replay')).toBe('true');
    expect(third.text).toBe(second.text);
    expect(chatCalls()).toBe(2);
  });

  it('a stream the caller left is not stored: the retry runs again', async () => {
    openaiFake.setBehaviour({ chunkDelayMs: 300 });
    const key = newKey();
    const body = chatBody('a b c d e f g h i j k l', { stream: true });
    const abort = new AbortController();
    const res = await fetch(`${gw.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'x-gateway-api-key': gw.adminKey, 'content-type': 'application/json', 'idempotency-key': key, ...chatHeaders },
      body: JSON.stringify(body),
      signal: abort.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    abort.abort();
    await reader.read().catch(() => undefined);
    openaiFake.setBehaviour({ chunkDelayMs: undefined });
    // The released claim may take a moment (the gateway sees the caller leave on its next write).
    let retry = await chat(key, body);
    for (let i = 0; i < 30 && retry.status === 409; i++) {
      await new Promise((r) => setTimeout(r, 200));
      retry = await chat(key, body);
    }
    expect(retry.status).toBe(200);
    expect(retry.headers.get('x-gateway-idempotent-replay')).toBeNull();
    expect(retry.text).toContain('data: [DONE]');
    expect(chatCalls()).toBe(2);
  });

  it('the claim of a crashed gateway lapses after the lease: the retry then runs', async () => {
    openaiFake.setBehaviour({ latencyMs: 60_000 });
    const child = await startChildGateway({ adminKey: gw.adminKey, kmsEndpoint: gw.kmsEndpoint }, { IDEMPOTENCY_LEASE_MS: String(LEASE_MS) });
    const key = newKey();
    const headers = { 'x-gateway-api-key': gw.adminKey, 'content-type': 'application/json', 'idempotency-key': key, ...chatHeaders };
    const pending = fetch(`${child.url}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify(chatBody()) }).catch(() => undefined);
    for (let i = 0; i < 200 && chatCalls() === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(chatCalls()).toBe(1);
    process.kill(child.pid, 'SIGKILL');
    await pending;
    openaiFake.setBehaviour({ latencyMs: undefined });
    const whileHeld = await chat(key);
    expect(whileHeld.status).toBe(409);
    const crashedAt = Date.now();
    let retried = whileHeld;
    while (retried.status === 409 && Date.now() - crashedAt < LEASE_MS * 4) {
      await new Promise((r) => setTimeout(r, 200));
      retried = await chat(key);
    }
    expect(retried.status).toBe(200);
    expect(Date.now() - crashedAt).toBeLessThan(LEASE_MS * 4);
    expect(chatCalls()).toBe(2);
  }, 90_000);
});

describe('scope and expiry', () => {
  it('the same key in two workspaces, or under two gateway keys, is two independent requests', async () => {
    const key = newKey();
    const own = await createThread(key);
    const elsewhere = await createThread(key, {}, { key: otherWorkspace.key });
    const secondKeys = await createThread(key, {}, { key: secondKey });
    expect([own.status, elsewhere.status, secondKeys.status]).toEqual([200, 200, 200]);
    expect(new Set([own.body.id, elsewhere.body.id, secondKeys.body.id]).size).toBe(3);
    expect(elsewhere.headers.get('x-gateway-idempotent-replay')).toBeNull();
    // Another body in the other workspace is not a conflict with this one's.
    expect((await createThread(key, { metadata: { a: 'b' } }, { key: otherWorkspace.key })).status).toBe(422);
    expect((await createThread(key)).body.id).toBe(own.body.id);
  });

  it('the key is kept 24 hours (TTL attribute) and an expired one counts as unused', async () => {
    const key = newKey();
    const first = await createThread(key);
    const { Items } = await ddb.send(new ScanCommand({ TableName: TABLE(), ConsistentRead: true }));
    const item = (Items ?? []).map((i) => unmarshall(i)).find((i) => i.sk === `KEY#${key}`)!;
    expect(item.pk).toContain(gw.workspaceId);
    const now = Math.floor(Date.now() / 1000);
    expect(item.ttl).toBeGreaterThanOrEqual(now + 86_400 - 60);
    expect(item.ttl).toBeLessThanOrEqual(now + 86_400 + 1);
    // A day later (DynamoDB deletes expired items within days, not at once): the key is free.
    await ddb.send(new PutItemCommand({ TableName: TABLE(), Item: marshall({ ...item, ttl: now - 1 }, { removeUndefinedValues: true }) }));
    const later = await createThread(key, { metadata: { another: 'body' } });
    expect(later.status).toBe(200);
    expect(later.body.id).not.toBe(first.body.id);
    const stored = await ddb.send(new GetItemCommand({ TableName: TABLE(), Key: marshall({ pk: item.pk, sk: item.sk }), ConsistentRead: true }));
    expect(unmarshall(stored.Item!).ttl).toBeGreaterThan(now + 86_000);
  });
});

/** A front proxy that runs the first request it gets to the gateway, then answers its caller 502 (a lost answer). */
async function lossyFront(target: string): Promise<{ url: string; dropped: string[]; close(): Promise<void> }> {
  const dropped: string[] = [];
  let first = true;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url!, target);
      const headers = { ...req.headers, host: url.host };
      const upstream = httpRequest(url, { method: req.method, headers }, (up) => {
        const body: Buffer[] = [];
        up.on('data', (c: Buffer) => body.push(c));
        up.on('end', () => {
          if (first) {
            first = false;
            dropped.push(Buffer.concat(body).toString('utf8'));
            res
              .writeHead(502, { 'content-type': 'application/json' })
              .end(JSON.stringify({ error: { message: 'bad gateway', type: 'server_error', param: null, code: null } }));
            return;
          }
          res.writeHead(up.statusCode!, up.headers).end(Buffer.concat(body));
        });
      });
      upstream.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    dropped,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The OpenAI SDK with its Idempotency-Key header on (one key per call, the same on its retries). */
class IdempotentOpenAI extends OpenAI {
  protected override idempotencyHeader = 'Idempotency-Key';
}

describe('the official OpenAI SDK retrying with its Idempotency-Key', () => {
  it('a lost answer (502 on the way back) is retried by the SDK and replayed: one thread, one billed chat call', async () => {
    const front = await lossyFront(gw.url);
    try {
      const client = new IdempotentOpenAI({
        baseURL: `${front.url}/v1`,
        apiKey: 'unused',
        maxRetries: 2,
        defaultHeaders: { 'x-gateway-api-key': gw.adminKey, ...chatHeaders },
      });
      const completion = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'bill me once' }] });
      expect(JSON.parse(front.dropped[0]!).id).toBe(completion.id);
      expect(chatCalls()).toBe(1);
    } finally {
      await front.close();
    }
    const threadFront = await lossyFront(gw.url);
    try {
      const client = new IdempotentOpenAI({
        baseURL: `${threadFront.url}/v1`,
        apiKey: 'unused',
        maxRetries: 2,
        defaultHeaders: { 'x-gateway-api-key': gw.adminKey, ...chatHeaders },
      });
      const thread = await client.beta.threads.create({});
      expect(JSON.parse(threadFront.dropped[0]!).id).toBe(thread.id);
    } finally {
      await threadFront.close();
    }
  });

  it('as documented: a plain OpenAI client with the key in its request options sends it on its retries too', async () => {
    const front = await lossyFront(gw.url);
    try {
      const client = new OpenAI({
        baseURL: `${front.url}/v1`,
        apiKey: 'unused',
        maxRetries: 2,
        defaultHeaders: { 'x-gateway-api-key': gw.adminKey, ...chatHeaders },
      });
      const completion = await client.chat.completions.create(
        { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'options key' }] },
        { headers: { 'Idempotency-Key': newKey() } },
      );
      expect(JSON.parse(front.dropped[0]!).id).toBe(completion.id);
      expect(chatCalls()).toBe(1);
    } finally {
      await front.close();
    }
  });

  it('an SDK timeout retried while the first call still runs waits (409, x-should-retry) and gets the first answer: one billed call', async () => {
    openaiFake.setBehaviour({ latencyMs: 1_500 });
    const client = new IdempotentOpenAI({
      baseURL: gw.baseUrl,
      apiKey: 'unused',
      maxRetries: 6,
      timeout: 500,
      defaultHeaders: { 'x-gateway-api-key': gw.adminKey, ...chatHeaders },
    });
    const started = Date.now();
    const completion = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'slow answer' }] });
    expect(completion.choices[0]!.message.content).toBe('echo: slow answer');
    expect(chatCalls()).toBe(1);
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});
