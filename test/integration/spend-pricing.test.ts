import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startAnthropicFake, startBedrockFake, startCohereFake, startOpenAIFake, type FakeServer } from '../fakes';
import { FAKE_AWS } from '../support/managed-fakes';
import { call, errorOf, logsOf, startTestGateway } from '../support/gateway';

/**
 * Cost of every request, through HTTP against the fakes: the catalogue's prices (checked
 * here against the providers' published list prices, per million tokens), a workspace's
 * overrides, unknown prices, cache hits, failures, and the streamed paths.
 */

let gw: LocalGateway;
let openai: FakeServer;
let anthropic: FakeServer;
let bedrock: FakeServer;
let cohere: FakeServer;

beforeAll(async () => {
  [openai, anthropic, bedrock, cohere] = await Promise.all([
    startOpenAIFake(),
    startAnthropicFake(),
    startBedrockFake({ credentials: FAKE_AWS }),
    startCohereFake(),
  ]);
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all([openai, anthropic, bedrock, cohere].map((f) => f?.close()));
});
beforeEach(() => {
  for (const f of [openai, anthropic, bedrock, cohere]) f.reset();
});

/** Published list prices (USD per million tokens) the catalogue must reproduce. */
const LIST_PRICE = {
  'gpt-4o-mini': { input: 0.15, cached: 0.075, output: 0.6 },
  'text-embedding-3-small': { input: 0.02 },
  'claude-sonnet-4-5-20250929': { input: 3, output: 15 },
  'anthropic.claude-3-5-sonnet-20240620-v1:0': { input: 3, output: 15 },
};

const usd = (tokens: number, perMillion: number) => (tokens * perMillion) / 1e6;
const close = (actual: number | null | undefined, expected: number) => {
  expect(actual).not.toBeNull();
  expect(Math.abs((actual as number) - expected)).toBeLessThan(1e-9);
};

let traceSeq = 0;
const trace = (name: string) => `price-${name}-${Date.now()}-${traceSeq++}`;

const viaOpenAI = (t: string, extra: Record<string, string> = {}) => ({
  'x-gateway-provider': 'openai',
  authorization: 'Bearer sk-test',
  'x-gateway-custom-host': `${openai.url}/v1`,
  'x-gateway-trace-id': t,
  ...extra,
});

async function logOf(t: string) {
  const logs = await logsOf(gw, `trace_id=${t}`);
  expect(logs.body.data).toHaveLength(1);
  return logs.body.data[0];
}

const chat = (model: string, content = 'how much does this cost', extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: 'user', content }],
  ...extra,
});

describe('catalogue prices', () => {
  it('a non-streamed chat completion carries x-gateway-cost, equal to its log record and to the list price of its usage', async () => {
    const t = trace('chat');
    const res = await call(gw, 'POST', '/v1/chat/completions', { headers: viaOpenAI(t), body: chat('gpt-4o-mini') });
    expect(res.status).toBe(200);
    const { prompt_tokens, completion_tokens } = res.body.usage;
    expect(prompt_tokens).toBeGreaterThan(0);
    const expected = usd(prompt_tokens, LIST_PRICE['gpt-4o-mini'].input) + usd(completion_tokens, LIST_PRICE['gpt-4o-mini'].output);
    close(Number(res.headers.get('x-gateway-cost')), expected);
    const record = await logOf(t);
    close(record.cost_usd, expected);
    expect(record).toMatchObject({ price_source: 'catalogue', pricing_unknown: false, provider: 'openai', model: 'gpt-4o-mini' });
  });

  it('a model priced again (its catalogue match remembered) is priced from its own usage every time', async () => {
    const costs = new Set<number>();
    for (const words of ['short', 'a somewhat longer question about prices', 'the longest question of the three, about what a gateway costs per request']) {
      const res = await call(gw, 'POST', '/v1/chat/completions', { headers: viaOpenAI(trace('again')), body: chat('gpt-4o-mini', words) });
      expect(res.status).toBe(200);
      const { prompt_tokens, completion_tokens } = res.body.usage;
      const cost = Number(res.headers.get('x-gateway-cost'));
      close(cost, usd(prompt_tokens, LIST_PRICE['gpt-4o-mini'].input) + usd(completion_tokens, LIST_PRICE['gpt-4o-mini'].output));
      costs.add(cost);
    }
    expect(costs.size).toBe(3);
  });

  it('a stream the caller asked no usage for is priced all the same: the gateway asks OpenAI for usage and hides it', async () => {
    const t = trace('stream');
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...viaOpenAI(t), 'x-gateway-api-key': gw.adminKey, 'content-type': 'application/json' },
      body: JSON.stringify(chat('gpt-4o-mini', 'stream the cost', { stream: true })),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-cost')).toBeNull();
    const text = await res.text();
    const chunks = text
      .split('\n\n')
      .map((f) => f.replace(/^data: /, ''))
      .filter((d) => d && d !== '[DONE]')
      .map((d) => JSON.parse(d));
    expect(chunks.length).toBeGreaterThan(1);
    // The caller gets no usage chunk; the other chunks pass as OpenAI sent them (with the
    // `usage: null` it adds once asked for usage).
    expect(chunks.every((c) => c.choices.length > 0 && (c.usage ?? null) === null)).toBe(true);
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(openai.last()!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });

    const record = await logOf(t);
    expect(record.usage.total_tokens).toBeGreaterThan(0);
    const expected = usd(record.usage.prompt_tokens, LIST_PRICE['gpt-4o-mini'].input) + usd(record.usage.completion_tokens, LIST_PRICE['gpt-4o-mini'].output);
    close(record.cost_usd, expected);
    expect(record.price_source).toBe('catalogue');
  });

  it('a caller who asked for usage gets it in the stream unchanged, and the record is priced from it', async () => {
    const t = trace('stream-usage');
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...viaOpenAI(t), 'x-gateway-api-key': gw.adminKey, 'content-type': 'application/json' },
      body: JSON.stringify(chat('gpt-4o-mini', 'stream with usage', { stream: true, stream_options: { include_usage: true } })),
    });
    const frames = (await res.text()).split('\n\n').filter((f) => f.startsWith('data: {'));
    const usage = JSON.parse(frames.at(-1)!.slice(6)).usage;
    expect(usage.total_tokens).toBeGreaterThan(0);
    const record = await logOf(t);
    expect(record.usage).toEqual({ prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, total_tokens: usage.total_tokens });
    close(record.cost_usd, usd(usage.prompt_tokens, 0.15) + usd(usage.completion_tokens, 0.6));
  });

  it('embeddings are priced per input token', async () => {
    const t = trace('embed');
    const res = await call(gw, 'POST', '/v1/embeddings', {
      headers: viaOpenAI(t),
      body: { model: 'text-embedding-3-small', input: ['one two three', 'four five'] },
    });
    expect(res.status).toBe(200);
    const expected = usd(res.body.usage.prompt_tokens, LIST_PRICE['text-embedding-3-small'].input);
    close(Number(res.headers.get('x-gateway-cost')), expected);
    close((await logOf(t)).cost_usd, expected);
  });

  it('Anthropic (translated, streamed) is priced at Anthropic’s prices for the model that answered', async () => {
    const t = trace('anthropic');
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gateway-provider': 'anthropic',
        authorization: 'Bearer sk-ant-test',
        'x-gateway-custom-host': `${anthropic.url}/v1`,
        'x-gateway-trace-id': t,
        'x-gateway-api-key': gw.adminKey,
        'content-type': 'application/json',
      },
      body: JSON.stringify(chat('claude-sonnet-4-5-20250929', 'anthropic stream', { stream: true, max_tokens: 50 })),
    });
    expect(res.status).toBe(200);
    await res.text();
    const record = await logOf(t);
    const p = LIST_PRICE['claude-sonnet-4-5-20250929'];
    close(record.cost_usd, usd(record.usage.prompt_tokens, p.input) + usd(record.usage.completion_tokens, p.output));
    expect(record).toMatchObject({ provider: 'anthropic', price_source: 'catalogue' });
  });

  it('the Responses API (translated to Anthropic) is priced like the chat it runs on', async () => {
    const t = trace('responses');
    const res = await call(gw, 'POST', '/v1/responses', {
      headers: {
        'x-gateway-provider': 'anthropic',
        authorization: 'Bearer sk-ant-test',
        'x-gateway-custom-host': `${anthropic.url}/v1`,
        'x-gateway-trace-id': t,
      },
      body: { model: 'claude-sonnet-4-5-20250929', input: 'price my response', max_output_tokens: 50 },
    });
    expect(res.status).toBe(200);
    const { input_tokens, output_tokens } = res.body.usage;
    const p = LIST_PRICE['claude-sonnet-4-5-20250929'];
    const expected = usd(input_tokens, p.input) + usd(output_tokens, p.output);
    close(Number(res.headers.get('x-gateway-cost')), expected);
    close((await logOf(t)).cost_usd, expected);
  });

  it('Bedrock (event stream) is priced from the usage in its metadata event', async () => {
    const t = trace('bedrock');
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gateway-provider': 'bedrock',
        'x-gateway-aws-access-key-id': FAKE_AWS.accessKeyId,
        'x-gateway-aws-secret-access-key': FAKE_AWS.secretAccessKey,
        'x-gateway-aws-region': 'us-east-1',
        'x-gateway-custom-host': bedrock.url,
        'x-gateway-trace-id': t,
        'x-gateway-api-key': gw.adminKey,
        'content-type': 'application/json',
      },
      body: JSON.stringify(chat('anthropic.claude-3-5-sonnet-20240620-v1:0', 'bedrock stream', { stream: true })),
    });
    expect(res.status).toBe(200);
    await res.text();
    const record = await logOf(t);
    expect(record.usage.total_tokens).toBeGreaterThan(0);
    const p = LIST_PRICE['anthropic.claude-3-5-sonnet-20240620-v1:0'];
    close(record.cost_usd, usd(record.usage.prompt_tokens, p.input) + usd(record.usage.completion_tokens, p.output));
  });
});

describe('what has no price', () => {
  it('an unknown model costs null with pricing_unknown, never 0, and sends no cost header', async () => {
    const t = trace('unknown');
    const res = await call(gw, 'POST', '/v1/chat/completions', { headers: viaOpenAI(t), body: chat('gpt-4o-mini-unlisted-finetune') });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-cost')).toBeNull();
    expect(await logOf(t)).toMatchObject({ cost_usd: null, pricing_unknown: true, price_source: null });
    // Still unknown when asked again (the failed match is remembered, not turned into a price).
    const again = await call(gw, 'POST', '/v1/chat/completions', { headers: viaOpenAI(trace('unknown')), body: chat('gpt-4o-mini-unlisted-finetune') });
    expect(again.headers.get('x-gateway-cost')).toBeNull();
  });

  it('a provider the catalogue does not list is unknown too (no borrowed price for the same model name)', async () => {
    const t = trace('unlisted-provider');
    const res = await call(gw, 'POST', '/v1/chat/completions', {
      headers: { ...viaOpenAI(t), 'x-gateway-provider': 'deepinfra' },
      body: chat('gpt-4o-mini'),
    });
    expect(res.status).toBe(200);
    expect(await logOf(t)).toMatchObject({ provider: 'deepinfra', cost_usd: null, pricing_unknown: true });
  });

  it('a failed request without usage was not billed: cost 0', async () => {
    const t = trace('failed');
    const res = await call(gw, 'POST', '/v1/chat/completions', { headers: viaOpenAI(t), body: chat('gpt-4o-mini-fail-400') });
    expect(res.status).toBe(400);
    expect(await logOf(t)).toMatchObject({ cost_usd: 0, price_source: 'not_billed', pricing_unknown: false });
  });
});

describe('cache hits', () => {
  it('cost 0 and record what they saved', async () => {
    const config = JSON.stringify({ provider: 'openai', api_key: 'sk-test', custom_host: `${openai.url}/v1`, cache: { mode: 'simple', max_age: 600 } });
    const body = chat('gpt-4o-mini', `cache me ${Date.now()}`);
    const first = await call(gw, 'POST', '/v1/chat/completions', { headers: { 'x-gateway-config': config, 'x-gateway-trace-id': trace('miss') }, body });
    expect(first.headers.get('x-gateway-cache-status')).toBe('MISS');
    const price = Number(first.headers.get('x-gateway-cost'));
    expect(price).toBeGreaterThan(0);
    let hit = first;
    let t = '';
    for (let i = 0; i < 50 && hit.headers.get('x-gateway-cache-status') !== 'HIT'; i++) {
      t = trace('hit');
      hit = await call(gw, 'POST', '/v1/chat/completions', { headers: { 'x-gateway-config': config, 'x-gateway-trace-id': t }, body });
    }
    expect(hit.headers.get('x-gateway-cache-status')).toBe('HIT');
    expect(hit.headers.get('x-gateway-cost')).toBe('0');
    const record = await logOf(t);
    expect(record).toMatchObject({ cost_usd: 0, price_source: 'cache', pricing_unknown: false });
    close(record.cost_saved_usd, price);
  });
});

describe('price overrides', () => {
  const base = { provider: 'openai', model: 'ft:gpt-4o-mini:acme:2026' };

  it('price a fine-tuned model the catalogue does not know, and win over the catalogue for one it does', async () => {
    const created = await call(gw, 'POST', '/v1/prices', { body: { ...base, input_per_mtok: 3, output_per_mtok: 12, per_request: 0.001 } });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      object: 'price_override',
      ...base,
      input_per_mtok: 3,
      output_per_mtok: 12,
      per_request: 0.001,
      workspace_id: gw.workspaceId,
    });
    expect(created.body.id).toMatch(/^price_/);

    const t = trace('override');
    const res = await call(gw, 'POST', '/v1/chat/completions', { headers: viaOpenAI(t), body: chat(base.model) });
    const { prompt_tokens, completion_tokens } = res.body.usage;
    const expected = usd(prompt_tokens, 3) + usd(completion_tokens, 12) + 0.001;
    close(Number(res.headers.get('x-gateway-cost')), expected);
    expect(await logOf(t)).toMatchObject({ price_source: 'override', pricing_unknown: false });

    const negotiated = await call(gw, 'POST', '/v1/prices', { body: { provider: 'openai', model: 'GPT-4o-mini', input_per_mtok: 0.1, output_per_mtok: 0.4 } });
    expect(negotiated.status).toBe(200);
    const t2 = trace('negotiated');
    const res2 = await call(gw, 'POST', '/v1/chat/completions', { headers: viaOpenAI(t2), body: chat('gpt-4o-mini') });
    close(Number(res2.headers.get('x-gateway-cost')), usd(res2.body.usage.prompt_tokens, 0.1) + usd(res2.body.usage.completion_tokens, 0.4));
    expect((await call(gw, 'DELETE', `/v1/prices/${negotiated.body.id}`)).body).toEqual({
      object: 'price_override.deleted',
      id: negotiated.body.id,
      deleted: true,
    });
  });

  it('a rerank model is priced per search unit through an override', async () => {
    await call(gw, 'POST', '/v1/prices', { body: { provider: 'cohere', model: 'rerank-v3.5', per_search_unit: 0.002 } });
    const t = trace('rerank');
    const res = await call(gw, 'POST', '/v1/rerank', {
      headers: { 'x-gateway-provider': 'cohere', authorization: 'Bearer co-test', 'x-gateway-custom-host': cohere.url, 'x-gateway-trace-id': t },
      body: { model: 'rerank-v3.5', query: 'q', documents: ['a', 'b', 'c'] },
    });
    expect(res.status).toBe(200);
    const units = res.body.usage.search_units;
    expect(units).toBeGreaterThan(0);
    close(Number(res.headers.get('x-gateway-cost')), units * 0.002);
    expect(await logOf(t)).toMatchObject({ price_source: 'override', search_units: units });
  });

  it('are validated, unique per provider and model, readable, replaceable and deletable', async () => {
    const bad = await call(gw, 'POST', '/v1/prices', { body: { provider: 'openai', model: 'x', input_per_mtok: -1 } });
    expect(bad.status).toBe(400);
    expect(errorOf(bad).param).toBe('input_per_mtok');
    const unknownField = await call(gw, 'POST', '/v1/prices', { body: { provider: 'openai', model: 'x', input_price: 1 } });
    expect(unknownField.status).toBe(400);

    const body = { provider: 'openai', model: `crud-${Date.now()}`, input_per_mtok: 1 };
    const created = await call(gw, 'POST', '/v1/prices', { body });
    expect(created.status).toBe(200);
    const again = await call(gw, 'POST', '/v1/prices', { body });
    expect(again.status).toBe(409);
    expect(errorOf(again).code).toBe('price_override_exists');

    const replaced = await call(gw, 'PUT', `/v1/prices/${created.body.id}`, { body: { output_per_mtok: 2 } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.input_per_mtok).toBeUndefined();
    expect(replaced.body.output_per_mtok).toBe(2);
    expect((await call(gw, 'GET', `/v1/prices/${created.body.id}`)).body.output_per_mtok).toBe(2);
    expect((await call(gw, 'GET', '/v1/prices')).body.data.map((o: { id: string }) => o.id)).toContain(created.body.id);

    expect((await call(gw, 'DELETE', `/v1/prices/${created.body.id}`)).status).toBe(200);
    expect((await call(gw, 'GET', `/v1/prices/${created.body.id}`)).status).toBe(404);
    expect((await call(gw, 'PUT', `/v1/prices/${created.body.id}`, { body: {} })).status).toBe(404);
  });

  it('belong to their workspace: another workspace neither sees nor uses them', async () => {
    const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: `Prices other ${Date.now()}` } });
    const key = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'other', workspace_id: ws.body.id, scopes: ['admin', 'gateway'] } });
    const otherKey = key.body.secret as string;
    const mine = await call(gw, 'POST', '/v1/prices', { body: { provider: 'openai', model: `mine-${Date.now()}`, input_per_mtok: 5 } });
    expect((await call(gw, 'GET', `/v1/prices/${mine.body.id}`, { key: otherKey })).status).toBe(404);
    expect((await call(gw, 'GET', '/v1/prices', { key: otherKey })).body.data).toEqual([]);
    expect((await call(gw, 'DELETE', `/v1/prices/${mine.body.id}`, { key: otherKey })).status).toBe(404);

    const t = trace('other-ws');
    await call(gw, 'POST', '/v1/chat/completions', { key: otherKey, headers: viaOpenAI(t), body: chat(mine.body.model) });
    // The record is in the other workspace (read with its key), not in this one.
    let own = await call(gw, 'GET', `/v1/logs?trace_id=${t}`, { key: otherKey });
    for (let i = 0; i < 50 && own.body.data.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      own = await call(gw, 'GET', `/v1/logs?trace_id=${t}`, { key: otherKey });
    }
    expect((await call(gw, 'GET', `/v1/logs?trace_id=${t}`)).body.data).toHaveLength(0);
    expect(own.body.data[0]).toMatchObject({ cost_usd: null, pricing_unknown: true });
  });
});
