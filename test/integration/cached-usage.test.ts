import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { LocalGateway } from '../../infra/local/server';
import { startAllFakes, type AllFakes, type FakeServer } from '../fakes';
import { FAKE_AWS, manageFakes } from '../support/managed-fakes';
import { call, logsOf, startTestGateway } from '../support/gateway';

// Prompt-cache usage (tokens the provider read from or wrote to its prompt cache) is
// reported in every dialect, streamed and not, whichever provider answered: Anthropic's
// cache_read_input_tokens / cache_creation_input_tokens, chat's
// prompt_tokens_details.cached_tokens, Responses' input_tokens_details.cached_tokens. And
// the request is priced at the cache rates: reads cheaper than input, writes at the write rate.
let gw: LocalGateway;
let fakes: AllFakes;

beforeAll(async () => {
  fakes = await startAllFakes({}, { credentials: FAKE_AWS });
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0' } });
  await manageFakes(gw, fakes, 'cu');
  const deepseek = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'cu-deepseek', provider: 'deepseek', api_key: 'sk-deepseek', custom_host: `${fakes.openai.url}/v1` },
  });
  expect(deepseek.status, deepseek.text).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await fakes?.close();
});
beforeEach(() => fakes.reset());

const READ = 40;
const WRITE = 10;

interface Upstream {
  name: string;
  slug: string;
  model: string;
  fake: () => FakeServer;
  /** Whether the provider reports cache writes (OpenAI and Gemini report reads only). */
  writes: boolean;
}

const UPSTREAMS: Upstream[] = [
  { name: 'OpenAI', slug: 'cu-openai', model: 'gpt-4o-mini', fake: () => fakes.openai, writes: false },
  { name: 'Anthropic', slug: 'cu-claude', model: 'claude-haiku-4-5', fake: () => fakes.anthropic, writes: true },
  { name: 'Bedrock', slug: 'cu-bedrock', model: 'anthropic.claude-3-5-sonnet-20240620-v1:0', fake: () => fakes.bedrock, writes: true },
  { name: 'Gemini', slug: 'cu-gemini', model: 'gemini-2.5-flash', fake: () => fakes.gemini, writes: false },
];

const anthropic = (slug: string) =>
  new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': `@${slug}` } });
const openai = (slug: string) =>
  new OpenAI({
    baseURL: `${gw.url}/v1`,
    apiKey: 'unused',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': `@${slug}` },
  });

describe.each(UPSTREAMS)('$name upstream reporting prompt-cache usage', (u) => {
  beforeEach(() => u.fake().setBehaviour({ promptCache: { read: READ, write: WRITE } }));
  const written = () => (u.writes ? WRITE : 0);

  it('/v1/messages: cache_read_input_tokens and cache_creation_input_tokens, apart from input_tokens; streamed too', async () => {
    const body = { model: u.model, max_tokens: 100, messages: [{ role: 'user' as const, content: 'count my cached tokens' }] };
    const message = await anthropic(u.slug).messages.create(body);
    expect(message.usage.cache_read_input_tokens).toBe(READ);
    expect(message.usage.cache_creation_input_tokens).toBe(written());
    expect(message.usage.input_tokens).toBeGreaterThan(0);

    const streamed = await anthropic(u.slug).messages.stream(body).finalMessage();
    expect(streamed.usage.cache_read_input_tokens).toBe(READ);
    expect(streamed.usage.cache_creation_input_tokens).toBe(written());
    expect(streamed.usage.input_tokens).toBe(message.usage.input_tokens);
  });

  it('/v1/chat/completions: prompt_tokens_details.cached_tokens, inside prompt_tokens; streamed too', async () => {
    const body = { model: u.model, messages: [{ role: 'user' as const, content: 'count my cached tokens' }] };
    const completion = await openai(u.slug).chat.completions.create(body);
    expect(completion.usage!.prompt_tokens_details!.cached_tokens).toBe(READ);
    expect(completion.usage!.prompt_tokens).toBeGreaterThan(READ + written());

    const stream = await openai(u.slug).chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    expect(usage!.prompt_tokens_details!.cached_tokens).toBe(READ);
    expect(usage!.prompt_tokens).toBe(completion.usage!.prompt_tokens);
  });
});

describe.each([
  { name: 'OpenAI-shaped (translated)', slug: 'cu-deepseek', model: 'deepseek-chat', fake: () => fakes.openai },
  { name: 'Anthropic', slug: 'cu-claude', model: 'claude-haiku-4-5', fake: () => fakes.anthropic },
])('/v1/responses on $name', (u) => {
  beforeEach(() => u.fake().setBehaviour({ promptCache: { read: READ } }));

  it('input_tokens_details.cached_tokens, inside input_tokens; streamed too', async () => {
    const body = { model: u.model, input: 'count my cached tokens', store: false };
    const response = await openai(u.slug).responses.create(body);
    expect(response.usage!.input_tokens_details.cached_tokens).toBe(READ);
    expect(response.usage!.input_tokens).toBeGreaterThan(READ);

    const stream = await openai(u.slug).responses.create({ ...body, stream: true });
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) if (event.type === 'response.completed') completed = event.response;
    expect(completed!.usage!.input_tokens_details.cached_tokens).toBe(READ);
    expect(completed!.usage!.input_tokens).toBe(response.usage!.input_tokens);
  });
});

describe('priced at the cache rates', () => {
  const perMillion = (tokens: number, usd: number) => (tokens * usd) / 1e6;
  const close = (actual: number, expected: number) => expect(Math.abs(actual - expected)).toBeLessThan(1e-12);
  let seq = 0;

  async function costOf(trace: string): Promise<number> {
    const logs = await logsOf(gw, `trace_id=${trace}`);
    expect(logs.body.data).toHaveLength(1);
    return logs.body.data[0].cost_usd;
  }

  it('Anthropic (/v1/messages, native): reads at the cache-read rate, writes at the cache-write rate', async () => {
    // claude-sonnet-4-5 list prices per million: input 3, cache write 3.75, cache read 0.30, output 15.
    const model = 'claude-sonnet-4-5-20250929';
    const ask = async (promptCache?: { read: number; write: number }) => {
      fakes.anthropic.setBehaviour({ promptCache });
      const trace = `cu-price-${Date.now()}-${seq++}`;
      const res = await call(gw, 'POST', '/v1/messages', {
        headers: { 'x-gateway-provider': '@cu-claude', 'x-gateway-trace-id': trace },
        body: { model, max_tokens: 100, messages: [{ role: 'user', content: 'what does caching save' }] },
      });
      expect(res.status, res.text).toBe(200);
      return { usage: res.body.usage, cost: await costOf(trace) };
    };
    const cached = await ask({ read: 2000, write: 500 });
    const { input_tokens, output_tokens } = cached.usage;
    close(cached.cost, perMillion(input_tokens, 3) + perMillion(500, 3.75) + perMillion(2000, 0.3) + perMillion(output_tokens, 15));
    // The same prompt tokens, none of them from the cache, cost more.
    const uncached = perMillion(input_tokens + 2500, 3) + perMillion(output_tokens, 15);
    expect(cached.cost).toBeLessThan(uncached);
  });

  it('Anthropic one-hour cache writes at the one-hour write rate, native and translated, streamed and not', async () => {
    // claude-sonnet-4-5: one-hour cache writes cost 6 per million (twice the input rate), five-minute ones 3.75.
    const model = 'claude-sonnet-4-5-20250929';
    fakes.anthropic.setBehaviour({ promptCache: { read: 0, write: 500, write1h: 200 } });
    const expected = (input: number, output: number) => perMillion(input, 3) + perMillion(300, 3.75) + perMillion(200, 6) + perMillion(output, 15);
    const body = { model, max_tokens: 100, messages: [{ role: 'user' as const, content: 'what does an hour cost' }] };
    const mixed = JSON.stringify({ strategy: { mode: 'fallback' }, targets: [{ provider: '@cu-claude' }, { provider: '@cu-openai' }] });
    for (const [how, headers] of [
      ['native', { 'x-gateway-provider': '@cu-claude' }],
      ['translated', { 'x-gateway-config': mixed }],
    ] as const) {
      for (const stream of [false, true]) {
        const trace = `cu-price-1h-${how}-${stream}-${Date.now()}-${seq++}`;
        const api = new Anthropic({
          baseURL: gw.url,
          apiKey: 'unused',
          maxRetries: 0,
          defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-trace-id': trace, ...headers },
        });
        const message = stream ? await api.messages.stream(body).finalMessage() : await api.messages.create(body);
        expect(message.usage.cache_creation_input_tokens, `${how} stream=${stream}`).toBe(500);
        close(await costOf(trace), expected(message.usage.input_tokens, message.usage.output_tokens));
      }
    }
  });

  it('OpenAI (/v1/messages, translated): cached tokens at the cached-input rate', async () => {
    // gpt-4o-mini list prices per million: input 0.15, cached input 0.075, output 0.60.
    fakes.openai.setBehaviour({ promptCache: { read: 4000 } });
    const trace = `cu-price-${Date.now()}-${seq++}`;
    const message = await anthropic('cu-openai').messages.create(
      { model: 'gpt-4o-mini', max_tokens: 100, messages: [{ role: 'user', content: 'what does caching save' }] },
      { headers: { 'x-gateway-trace-id': trace } },
    );
    expect(message.usage.cache_read_input_tokens).toBe(4000);
    const cost = await costOf(trace);
    close(cost, perMillion(message.usage.input_tokens, 0.15) + perMillion(4000, 0.075) + perMillion(message.usage.output_tokens, 0.6));
    expect(cost).toBeLessThan(perMillion(message.usage.input_tokens + 4000, 0.15) + perMillion(message.usage.output_tokens, 0.6));
  });
});
