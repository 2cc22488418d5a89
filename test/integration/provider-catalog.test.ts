import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { FAKE_WATSONX_MODELS, startOpenAIFake, startReplicateFake, startWatsonxFake, type FakeServer } from '../fakes';
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
let wx: FakeServer;
let rep: FakeServer;
let catalog: Entry[];

beforeAll(async () => {
  [fake, wx, rep] = await Promise.all([startOpenAIFake(), startWatsonxFake({ apiKey: 'ibm-cloud-key' }), startReplicateFake({ apiKey: 'r8-token' })]);
  gw = await startTestGateway();
  const res = await call(gw, 'GET', '/v1/providers/catalog');
  expect(res.status).toBe(200);
  catalog = res.body.data;
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all([fake, wx, rep].map((f) => f?.close()));
});
beforeEach(() => {
  fake.reset();
  wx.reset();
  rep.reset();
});

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

  it('lists models from <custom host>/models for every provider that declares a model list', async () => {
    const listing = compatible().filter((e) => e.routes.includes('models'));
    expect(listing.length).toBeGreaterThan(30);
    for (const { slug } of listing) {
      fake.reset();
      const res = await call(gw, 'GET', '/v1/models', {
        headers: { 'x-gateway-provider': slug, 'x-gateway-custom-host': hostOf(slug), authorization: `Bearer ${keyOf(slug)}` },
      });
      expect(res.status, `${slug}: ${res.text}`).toBe(200);
      expect(res.body.data.length, slug).toBeGreaterThan(0);
      expect({ slug, path: fake.last()!.path, method: fake.last()!.method }).toEqual({ slug, path: `/${slug}/v1/models`, method: 'GET' });
    }
  });

  it('sends audio to <custom host>/audio/* for every provider that declares it', async () => {
    const withAudio = compatible().filter((e) => e.routes.includes('audio'));
    expect(withAudio.map((e) => e.slug).sort()).toEqual(['groq', 'openai']);
    for (const { slug } of withAudio) {
      fake.reset();
      const res = await fetch(`${gw.url}/v1/audio/speech`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-gateway-api-key': gw.adminKey,
          'x-gateway-provider': slug,
          'x-gateway-custom-host': hostOf(slug),
          authorization: `Bearer ${keyOf(slug)}`,
        },
        body: JSON.stringify({ model: 'tts-1', voice: 'alloy', input: 'hello audio' }),
      });
      expect(res.status, slug).toBe(200);
      expect((await res.arrayBuffer()).byteLength, slug).toBeGreaterThan(0);
      expect({ slug, path: fake.last()!.path }).toEqual({ slug, path: `/${slug}/v1/audio/speech` });
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
const MODEL: Record<string, string> = { xai: 'grok-4', deepseek: 'deepseek-reasoner' };

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

// The native adapters added for breadth, each against a fake speaking its real wire format:
// every route the catalog declares for them, plain and streamed, is a row here.
const wxHeaders = (extra: Record<string, string> = {}) => ({
  'x-gateway-provider': 'watsonx',
  authorization: 'Bearer ibm-cloud-key',
  'x-gateway-custom-host': wx.url,
  'x-gateway-watsonx-project-id': 'a1b2c3d4-0000-4000-8000-000000000001',
  'x-gateway-watsonx-iam-url': `${wx.url}/identity/token`,
  ...extra,
});
const repHeaders = (extra: Record<string, string> = {}) => ({
  'x-gateway-provider': 'replicate',
  authorization: 'Bearer r8-token',
  'x-gateway-custom-host': `${rep.url}/v1`,
  ...extra,
});

function streamedText(sse: string): { text: string; finish?: string; usage?: { total_tokens: number } } {
  let text = '';
  let finish: string | undefined;
  let usage: { total_tokens: number } | undefined;
  for (const line of sse.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const c = JSON.parse(line.slice(6));
    text += c.choices?.[0]?.delta?.content ?? '';
    finish = c.choices?.[0]?.finish_reason ?? finish;
    usage = c.usage ?? usage;
  }
  return { text, finish, usage };
}

// Azure AI's rerank rows are in rerank.test.ts, with the other rerank providers.
const NATIVE_ROUTES: Record<string, string[]> = {
  watsonx: ['chat', 'embeddings', 'models'],
  replicate: ['chat'],
  'azure-ai': ['chat', 'embeddings', 'rerank'],
};

describe('native providers added for breadth, every declared route against its fake', () => {
  it('the catalog declares exactly the routes this table covers', () => {
    for (const [slug, routes] of Object.entries(NATIVE_ROUTES)) {
      expect(
        catalog.find((e) => e.slug === slug),
        slug,
      ).toMatchObject({ kind: 'native', routes });
    }
    expect(catalog.find((e) => e.slug === 'watsonx')!.required_settings).toEqual(['api_key', 'watsonx_region', 'watsonx_project_id']);
  });

  describe('watsonx', () => {
    const chatBody = (stream: boolean, extra: Record<string, unknown> = {}) => ({
      model: 'ibm/granite-3-8b-instruct',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello watsonx' },
      ],
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      ...extra,
    });

    it.each([false, true])('chat (stream: %s) reaches /ml/v1/text/chat[_stream]?version= with an IAM token, model_id and project_id', async (stream) => {
      const res = await call(gw, 'POST', '/v1/chat/completions', { headers: wxHeaders(), body: chatBody(stream) });
      expect(res.status, res.text).toBe(200);
      if (stream) {
        expect(res.text).toContain('data: [DONE]');
        expect(streamedText(res.text)).toMatchObject({ text: 'echo: hello watsonx', finish: 'stop' });
        expect(streamedText(res.text).usage!.total_tokens).toBeGreaterThan(0);
      } else {
        expect(res.body.choices[0]).toMatchObject({ message: { role: 'assistant', content: 'echo: hello watsonx' }, finish_reason: 'stop' });
        expect(res.body.usage.total_tokens).toBeGreaterThan(0);
        expect(res.body.model).toBe('ibm/granite-3-8b-instruct');
      }
      const rec = wx.requests.find((r) => r.path.startsWith('/ml/'))!;
      expect(rec.path).toBe(stream ? '/ml/v1/text/chat_stream' : '/ml/v1/text/chat');
      expect(rec.query.version).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(rec.headers.authorization).toMatch(/^Bearer wx-iam-/);
      expect(rec.body).toMatchObject({ model_id: 'ibm/granite-3-8b-instruct', project_id: 'a1b2c3d4-0000-4000-8000-000000000001' });
      expect(rec.body).not.toHaveProperty('model');
      expect(rec.body).not.toHaveProperty('stream');
    });

    it('a string tool_choice goes as tool_choice_option (watsonx refuses it as tool_choice), and the tool call comes back', async () => {
      const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } }];
      const res = await call(gw, 'POST', '/v1/chat/completions', {
        headers: wxHeaders(),
        body: { model: 'ibm/granite-3-8b-instruct', messages: [{ role: 'user', content: 'weather in Lisbon' }], tools, tool_choice: 'required' },
      });
      expect(res.status, res.text).toBe(200);
      expect(res.body.choices[0].finish_reason).toBe('tool_calls');
      expect(res.body.choices[0].message.tool_calls[0].function.name).toBe('get_weather');
      expect(wx.last()!.body).toMatchObject({ tool_choice_option: 'required' });
    });

    it('embeddings reach /ml/v1/text/embeddings with inputs and come back in the OpenAI shape', async () => {
      const res = await call(gw, 'POST', '/v1/embeddings', {
        headers: wxHeaders(),
        body: { model: 'ibm/slate-125m-english-rtrvr', input: ['first', 'second text'] },
      });
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.map((d: { index: number }) => d.index)).toEqual([0, 1]);
      expect(res.body.data[0].embedding).toHaveLength(8);
      expect(res.body.usage.prompt_tokens).toBe(3);
      expect(wx.last()!).toMatchObject({
        path: '/ml/v1/text/embeddings',
        body: { model_id: 'ibm/slate-125m-english-rtrvr', inputs: ['first', 'second text'] },
      });
    });

    it('models come from /ml/v1/foundation_model_specs', async () => {
      const res = await call(gw, 'GET', '/v1/models', { headers: wxHeaders() });
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.map((m: { id: string }) => m.id)).toEqual(expect.arrayContaining(FAKE_WATSONX_MODELS));
      expect(wx.last()!.path).toBe('/ml/v1/foundation_model_specs');
    });

    it('exchanges the API key once and reuses the token until shortly before it expires', async () => {
      const [longLived, shortLived] = await Promise.all([startWatsonxFake(), startWatsonxFake({ tokenTtlSeconds: 30 })]);
      try {
        for (const f of [longLived, shortLived]) {
          const headers = wxHeaders({
            'x-gateway-custom-host': f.url,
            'x-gateway-watsonx-iam-url': `${f.url}/identity/token`,
            authorization: 'Bearer ibm-cloud-key-2',
          });
          for (let i = 0; i < 3; i++) expect((await call(gw, 'POST', '/v1/chat/completions', { headers, body: chatBody(false) })).status).toBe(200);
          const exchange = f.requests.find((r) => r.path === '/identity/token')!;
          expect(exchange.rawBody.toString()).toBe('grant_type=urn%3Aibm%3Aparams%3Aoauth%3Agrant-type%3Aapikey&apikey=ibm-cloud-key-2');
        }
        // A 3600 s token serves all three calls; a 30 s one is within the refresh margin every time.
        expect(longLived.count('/identity/token')).toBe(1);
        expect(shortLived.count('/identity/token')).toBe(3);
        expect(longLived.count('/ml/v1/text/chat')).toBe(3);
      } finally {
        await Promise.all([longLived.close(), shortLived.close()]);
      }
    });

    it('a managed provider stores the key encrypted and the watsonx settings in the clear, and serves chat', async () => {
      const created = await call(gw, 'POST', '/v1/providers', {
        body: {
          slug: 'wx-managed',
          provider: 'watsonx',
          api_key: 'ibm-cloud-key',
          custom_host: wx.url,
          watsonx_project_id: 'proj-managed',
          watsonx_iam_url: `${wx.url}/identity/token`,
        },
      });
      expect(created.status, created.text).toBe(200);
      expect(created.text).not.toContain('ibm-cloud-key');
      expect(created.body).toMatchObject({ watsonx_project_id: 'proj-managed', watsonx_iam_url: `${wx.url}/identity/token` });
      const res = await call(gw, 'POST', '/v1/chat/completions', { headers: { 'x-gateway-provider': '@wx-managed' }, body: chatBody(false) });
      expect(res.status, res.text).toBe(200);
      expect(wx.last()!.body).toMatchObject({ project_id: 'proj-managed' });
    });

    it('a key IAM refuses is a 401 and watsonx itself is never called', async () => {
      const res = await call(gw, 'POST', '/v1/chat/completions', { headers: wxHeaders({ authorization: 'Bearer wrong-key' }), body: chatBody(false) });
      expect(res.status).toBe(401);
      expect(errorOf(res).message).toMatch(/IAM refused the API key: Provided API key could not be found/);
      expect(wx.count('/ml/')).toBe(0);
    });

    it('without a project or space, or with a blocked IAM URL, refuses before calling anyone', async () => {
      const noProject = await call(gw, 'POST', '/v1/chat/completions', { headers: wxHeaders({ 'x-gateway-watsonx-project-id': '' }), body: chatBody(false) });
      expect(noProject.status).toBe(400);
      expect(errorOf(noProject).param).toBe('x-gateway-watsonx-project-id');
      const metadata = await call(gw, 'POST', '/v1/chat/completions', {
        headers: wxHeaders({ 'x-gateway-watsonx-iam-url': 'http://169.254.169.254/identity/token', authorization: 'Bearer another-key' }),
        body: chatBody(false),
      });
      expect(metadata.status).toBe(400);
      expect(errorOf(metadata)).toMatchObject({ code: 'blocked_custom_host', param: 'x-gateway-watsonx-iam-url' });
      const space = await call(gw, 'POST', '/v1/chat/completions', {
        headers: wxHeaders({ 'x-gateway-watsonx-project-id': '', 'x-gateway-watsonx-space-id': 'space-7' }),
        body: chatBody(false),
      });
      expect(space.status, space.text).toBe(200);
      expect(wx.last()!.body).toMatchObject({ space_id: 'space-7' });
      expect(wx.requests.filter((r) => r.path.startsWith('/ml/'))).toHaveLength(1);
    });
  });

  describe('replicate', () => {
    const model = 'meta/meta-llama-3-8b-instruct';
    const body = (stream: boolean, extra: Record<string, unknown> = {}) => ({
      model,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello replicate' },
      ],
      max_tokens: 64,
      stop: ['\n\n', 'END'],
      ...(stream ? { stream: true } : {}),
      ...extra,
    });

    it('chat creates a prediction with Prefer: wait and reads its output array', async () => {
      const res = await call(gw, 'POST', '/v1/chat/completions', { headers: repHeaders(), body: body(false) });
      expect(res.status, res.text).toBe(200);
      expect(res.body.choices[0]).toMatchObject({ message: { role: 'assistant', content: 'echo: hello replicate' }, finish_reason: 'stop' });
      expect(res.body.usage.total_tokens).toBeGreaterThan(0);
      const rec = rep.last()!;
      expect({ path: rec.path, prefer: rec.headers.prefer, auth: rec.headers.authorization }).toEqual({
        path: `/v1/models/${model}/predictions`,
        prefer: 'wait',
        auth: 'Bearer r8-token',
      });
      expect(rec.body).toEqual({ input: { prompt: 'hello replicate', system_prompt: 'Be brief.', max_tokens: 64, stop_sequences: '\n\n,END' } });
    });

    it('a streamed chat creates the prediction, then reads its urls.stream events', async () => {
      const res = await call(gw, 'POST', '/v1/chat/completions', { headers: repHeaders(), body: body(true) });
      expect(res.status, res.text).toBe(200);
      expect(res.text).toContain('data: [DONE]');
      expect(streamedText(res.text)).toMatchObject({ text: 'echo: hello replicate', finish: 'stop' });
      const [create, stream] = rep.requests;
      expect(create).toMatchObject({ method: 'POST', path: `/v1/models/${model}/predictions`, body: { stream: true } });
      expect(create!.headers.prefer).toBeUndefined();
      expect(stream).toMatchObject({ method: 'GET', path: expect.stringMatching(/^\/v1\/stream\//) });
      expect(stream!.headers.accept).toBe('text/event-stream');
    });

    it('a model version goes to /v1/predictions with `version`; a conversation becomes a transcript prompt', async () => {
      const version = 'a'.repeat(64);
      const res = await call(gw, 'POST', '/v1/chat/completions', {
        headers: repHeaders(),
        body: {
          model: `someone/custom-llm:${version}`,
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'assistant', content: 'hello' },
            { role: 'user', content: 'how are you' },
          ],
        },
      });
      expect(res.status, res.text).toBe(200);
      expect(rep.last()!).toMatchObject({
        path: '/v1/predictions',
        body: { version, input: { prompt: 'User: hi\nAssistant: hello\nUser: how are you\nAssistant:' } },
      });
    });

    it('refuses tools (predictions have no tool calling) without calling Replicate', async () => {
      const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
      const res = await call(gw, 'POST', '/v1/chat/completions', { headers: repHeaders(), body: body(false, { tools }) });
      expect(res.status).toBe(400);
      expect(errorOf(res).param).toBe('tools');
      expect(rep.requests).toHaveLength(0);
    });

    it('does not follow a stream URL off replicate.com and off the host it called', async () => {
      rep.setBehaviour({
        respond: (r) =>
          r.method === 'POST'
            ? { status: 201, body: { id: 'p1', status: 'starting', urls: { stream: 'https://metadata.example.net/latest/meta-data' } } }
            : undefined,
      });
      const res = await call(gw, 'POST', '/v1/chat/completions', { headers: repHeaders(), body: body(true) });
      expect(res.status).toBe(502);
      expect(errorOf(res)).toMatchObject({ code: 'invalid_upstream_response' });
      expect(rep.requests).toHaveLength(1);
    });

    it('a token Replicate refuses is its 401, streamed or not', async () => {
      for (const stream of [false, true]) {
        const res = await call(gw, 'POST', '/v1/chat/completions', { headers: repHeaders({ authorization: 'Bearer bad' }), body: body(stream) });
        expect(res.status, `${stream}: ${res.text}`).toBe(401);
      }
    });
  });
});

describe('azure-ai: the Azure AI model inference API', () => {
  const headers = (extra: Record<string, string> = {}) => ({
    'x-gateway-provider': 'azure-ai',
    authorization: 'Bearer az-inference-key',
    'x-gateway-custom-host': `${fake.url}/azure-ai/models`,
    ...extra,
  });

  it('the fake, like the API, refuses a call without api-version or with an extra field and no extra-parameters header', async () => {
    const post = (query: string, h: Record<string, string>) =>
      fetch(`${fake.url}/azure-ai/models/chat/completions${query}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer k', ...h },
        body: JSON.stringify({ model: 'Mistral-large', messages: [{ role: 'user', content: 'hi' }], user: 'u1' }),
      });
    expect((await post('', { 'extra-parameters': 'pass-through' })).status).toBe(400);
    expect((await post('?api-version=2024-05-01-preview', {})).status).toBe(400);
    expect((await post('?api-version=2024-05-01-preview', { 'extra-parameters': 'pass-through' })).status).toBe(200);
  });

  it.each([false, true])('chat (stream: %s) reaches {root}/chat/completions?api-version= with the key and extra-parameters: pass-through', async (stream) => {
    const res = await call(gw, 'POST', '/v1/chat/completions', {
      headers: headers(),
      body: { model: 'Mistral-large-2407', messages: [{ role: 'user', content: 'hello azure' }], user: 'end-user-1', ...(stream ? { stream: true } : {}) },
    });
    expect(res.status, res.text).toBe(200);
    if (stream) expect(streamedText(res.text).text).toBe('echo: hello azure');
    else expect(res.body.choices[0].message.content).toBe('echo: hello azure');
    const rec = fake.last()!;
    expect({ path: rec.path, version: rec.query['api-version'], auth: rec.headers.authorization, extra: rec.headers['extra-parameters'] }).toEqual({
      path: '/azure-ai/models/chat/completions',
      version: '2024-05-01-preview',
      auth: 'Bearer az-inference-key',
      extra: 'pass-through',
    });
    expect(rec.body).toMatchObject({ model: 'Mistral-large-2407', user: 'end-user-1' });
  });

  it('embeddings reach {root}/embeddings, with the api-version the caller names', async () => {
    const res = await call(gw, 'POST', '/v1/embeddings', {
      headers: headers({ 'x-gateway-azure-api-version': '2025-04-01' }),
      body: { model: 'Cohere-embed-v3-english', input: ['one', 'two'] },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toHaveLength(2);
    expect(fake.last()!).toMatchObject({ path: '/azure-ai/models/embeddings', query: { 'api-version': '2025-04-01' } });
  });
});
