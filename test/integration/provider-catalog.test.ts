import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { FAKE_PROVIDER_RULES } from '../fakes/provider-rules';
import { call, errorOf, startTestGateway } from '../support/gateway';

// One table for every OpenAI-shaped provider, read from the catalog route itself: each slug
// is sent to the OpenAI fake through a custom host under its own path prefix, so the fake's
// record shows which provider's request it was, the path it reached and the key it carried.
// This file imports no functions/ module statically: the gateway sets the environment first.

interface Entry {
  slug: string;
  kind: 'openai-compatible' | 'native';
  routes: string[];
  required_settings: string[];
}

let gw: LocalGateway;
let fake: FakeServer;
let catalog: Entry[];

beforeAll(async () => {
  fake = await startOpenAIFake();
  gw = await startTestGateway();
  const res = await call(gw, 'GET', '/v1/providers/catalog');
  expect(res.status).toBe(200);
  catalog = res.body.data;
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});
beforeEach(() => fake.reset());

const compatible = () => catalog.filter((e) => e.kind === 'openai-compatible');
const keyOf = (slug: string) => `sk-${slug}-key`;
const hostOf = (slug: string) => `${fake.url}/${slug}/v1`;

function chat(slug: string, opts: { host?: boolean; key?: boolean; stream?: boolean } = {}) {
  const headers: Record<string, string> = { 'x-gateway-provider': slug };
  if (opts.host !== false) headers['x-gateway-custom-host'] = hostOf(slug);
  if (opts.key !== false) headers.authorization = `Bearer ${keyOf(slug)}`;
  return call(gw, 'POST', '/v1/chat/completions', {
    headers,
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello there' }], ...(opts.stream ? { stream: true } : {}) },
  });
}

describe('GET /v1/providers/catalog', () => {
  it('lists at least 45 providers, each with its routes and required settings', () => {
    expect(catalog.length).toBeGreaterThanOrEqual(45);
    expect(new Set(catalog.map((e) => e.slug)).size).toBe(catalog.length);
    for (const e of catalog) {
      expect(e.routes.length, e.slug).toBeGreaterThan(0);
      expect(Array.isArray(e.required_settings), e.slug).toBe(true);
    }
    const slugs = catalog.map((e) => e.slug);
    for (const slug of ['xai', 'cerebras', 'deepinfra', 'huggingface', 'dashscope', 'vllm', 'llama-cpp', 'lm-studio', 'tgi']) expect(slugs).toContain(slug);
  });

  it('is an admin route: a gateway-scoped key is refused', async () => {
    const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'app', scopes: ['gateway'] } });
    expect(created.status).toBe(200);
    const res = await call(gw, 'GET', '/v1/providers/catalog', { key: created.body.secret });
    expect(res.status).toBe(403);
  });

  it('keeps `catalog` out of managed-provider slugs, since the route would shadow it', async () => {
    const res = await call(gw, 'POST', '/v1/providers', { body: { slug: 'catalog', provider: 'openai', api_key: 'sk-x' } });
    expect(res.status).toBe(400);
    expect(errorOf(res).param).toBe('slug');
  });
});

describe('every OpenAI-shaped provider, through the gateway to its fake', () => {
  it('sends a chat completion to <custom host>/chat/completions with the caller key as bearer', async () => {
    for (const { slug } of compatible()) {
      fake.reset();
      const res = await chat(slug);
      expect(res.status, `${slug}: ${res.text}`).toBe(200);
      expect(res.body.choices[0].message.role, slug).toBe('assistant');
      const rec = fake.last()!;
      expect({ slug, path: rec.path, auth: rec.headers.authorization }).toEqual({ slug, path: `/${slug}/v1/chat/completions`, auth: `Bearer ${keyOf(slug)}` });
    }
  });

  it('streams a chat completion to the same path', async () => {
    for (const { slug } of compatible()) {
      fake.reset();
      const res = await chat(slug, { stream: true });
      expect(res.status, `${slug}: ${res.text}`).toBe(200);
      expect(res.text, slug).toContain('data: [DONE]');
      expect(fake.last()!.path, slug).toBe(`/${slug}/v1/chat/completions`);
    }
  });

  it('sends embeddings to <custom host>/embeddings for every provider that declares them', async () => {
    const withEmbeddings = compatible().filter((e) => e.routes.includes('embeddings'));
    expect(withEmbeddings.length).toBeGreaterThan(10);
    for (const { slug } of withEmbeddings) {
      fake.reset();
      const res = await call(gw, 'POST', '/v1/embeddings', {
        headers: { 'x-gateway-provider': slug, 'x-gateway-custom-host': hostOf(slug), authorization: `Bearer ${keyOf(slug)}` },
        body: { model: 'text-embedding-3-small', input: 'hello' },
      });
      expect(res.status, `${slug}: ${res.text}`).toBe(200);
      expect(res.body.data[0].embedding.length, slug).toBeGreaterThan(0);
      expect({ slug, path: fake.last()!.path }).toEqual({ slug, path: `/${slug}/v1/embeddings` });
    }
  });

  it('refuses, without calling anyone, a request that lacks the key a provider requires', async () => {
    for (const { slug } of compatible().filter((e) => e.required_settings.includes('api_key'))) {
      const res = await chat(slug, { key: false });
      expect(res.status, slug).toBe(400);
      expect(errorOf(res).param, slug).toBe('authorization');
    }
    expect(fake.requests).toHaveLength(0);
  });

  it('refuses a self-hosted or per-account provider without x-gateway-custom-host, naming the header', async () => {
    const hostRequired = compatible().filter((e) => e.required_settings.includes('custom_host'));
    expect(hostRequired.map((e) => e.slug).sort()).toEqual(['cloudflare-workers-ai', 'llama-cpp', 'lm-studio', 'tgi', 'vllm']);
    for (const { slug } of hostRequired) {
      const res = await chat(slug, { host: false });
      expect(res.status, slug).toBe(400);
      const err = errorOf(res);
      expect({ slug, param: err.param, code: err.code }).toEqual({ slug, param: 'x-gateway-custom-host', code: 'missing_custom_host' });
      expect(err.message).toContain('x-gateway-custom-host');
    }
    expect(fake.requests).toHaveLength(0);
  });

  it('lets a self-hosted server run without a key, sending none', async () => {
    const keyless = await startOpenAIFake({ keyless: true });
    try {
      for (const slug of ['vllm', 'llama-cpp', 'lm-studio', 'tgi']) {
        const res = await call(gw, 'POST', '/v1/chat/completions', {
          headers: { 'x-gateway-provider': slug, 'x-gateway-custom-host': `${keyless.url}/${slug}/v1` },
          body: { model: 'local-model', messages: [{ role: 'user', content: 'hello' }] },
        });
        expect(res.status, `${slug}: ${res.text}`).toBe(200);
        expect({ slug, path: keyless.last()!.path, auth: keyless.last()!.headers.authorization }).toEqual({
          slug,
          path: `/${slug}/v1/chat/completions`,
          auth: undefined,
        });
      }
    } finally {
      await keyless.close();
    }
  });
});

// Each field a provider documents as rejected (the fake refuses it under /<slug>/ with the
// provider's own error), sent with a value that asks for something. The gateway must never
// forward it: it refuses those whose loss would change the answer with a 400 naming the
// field, and drops (or renames) the others.
const ASKING: Record<string, unknown> = {
  logprobs: true,
  top_logprobs: 2,
  logit_bias: { '50256': -100 },
  n: 2,
  stop: ['\n\n'],
  frequency_penalty: 0.5,
  presence_penalty: 0.5,
  parallel_tool_calls: false,
  service_tier: 'auto',
  seed: 7,
  max_completion_tokens: 64,
  stream_options: { include_usage: true },
};
const REFUSED = new Set(['n', 'logprobs', 'top_logprobs', 'logit_bias', 'stop']);
/** Where a renamed field must arrive. */
const RENAMED: Record<string, Record<string, string>> = { 'mistral-ai': { seed: 'random_seed', max_completion_tokens: 'max_tokens' } };
const MODEL: Record<string, string> = { xai: 'grok-4' };

const quirkCases = Object.entries(FAKE_PROVIDER_RULES).flatMap(([slug, rules]) =>
  rules.flatMap((rule) => rule.rejects.flatMap((field) => [false, true].map((stream) => ({ slug, field, stream })))),
);

function quirkBody(slug: string, field: string, stream: boolean): Record<string, unknown> {
  const named = field === 'messages[].name';
  return {
    model: MODEL[slug] ?? 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hello there', ...(named ? { name: 'alice' } : {}) }],
    ...(named ? {} : { [field]: ASKING[field] }),
    ...(stream ? { stream: true } : {}),
  };
}

describe('per-provider parameter rules, against fakes that refuse what the provider refuses', () => {
  it('the fake refuses each documented field with the provider-style error when it arrives', async () => {
    for (const { slug, field } of quirkCases.filter((c) => !c.stream)) {
      const res = await fetch(`${hostOf(slug)}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${keyOf(slug)}` },
        body: JSON.stringify(quirkBody(slug, field, false)),
      });
      expect({ slug, field, status: res.status }).toEqual({ slug, field, status: slug === 'mistral-ai' ? 422 : 400 });
      await res.arrayBuffer();
    }
  });

  it.each(quirkCases)('$slug `$field` (stream: $stream) never reaches the provider', async ({ slug, field, stream }) => {
    fake.reset();
    const res = await call(gw, 'POST', '/v1/chat/completions', {
      headers: { 'x-gateway-provider': slug, 'x-gateway-custom-host': hostOf(slug), authorization: `Bearer ${keyOf(slug)}` },
      body: quirkBody(slug, field, stream),
    });
    if (REFUSED.has(field)) {
      expect(res.status, res.text).toBe(400);
      expect(errorOf(res)).toMatchObject({ param: field, code: 'unsupported_parameter' });
      expect(fake.requests).toHaveLength(0);
      return;
    }
    expect(res.status, res.text).toBe(200);
    if (stream) expect(res.text).toContain('data: [DONE]');
    const sent = fake.last()!.body as Record<string, unknown>;
    if (field === 'messages[].name') expect((sent.messages as Array<Record<string, unknown>>)[0]).not.toHaveProperty('name');
    else expect(sent).not.toHaveProperty(field);
    const renamed = RENAMED[slug]?.[field];
    if (renamed) expect(sent[renamed]).toEqual(ASKING[field]);
  });

  it('an inert value of a refused field (n: 1, logprobs: false) is dropped, not refused', async () => {
    fake.reset();
    const res = await call(gw, 'POST', '/v1/chat/completions', {
      headers: { 'x-gateway-provider': 'groq', 'x-gateway-custom-host': hostOf('groq'), authorization: `Bearer ${keyOf('groq')}` },
      body: { model: 'llama-3.3-70b-versatile', messages: [{ role: 'user', content: 'hi' }], n: 1, logprobs: false },
    });
    expect(res.status, res.text).toBe(200);
    expect(fake.last()!.body).not.toHaveProperty('logprobs');
  });

  it('a model-scoped rule leaves other models alone (xAI non-reasoning models take penalties and stop)', async () => {
    fake.reset();
    const res = await call(gw, 'POST', '/v1/chat/completions', {
      headers: { 'x-gateway-provider': 'xai', 'x-gateway-custom-host': hostOf('xai'), authorization: `Bearer ${keyOf('xai')}` },
      body: { model: 'grok-4-fast-non-reasoning', messages: [{ role: 'user', content: 'hi' }], presence_penalty: 0.5, stop: ['END'] },
    });
    expect(res.status, res.text).toBe(200);
    expect(fake.last()!.body).toMatchObject({ presence_penalty: 0.5, stop: ['END'] });
  });
});
