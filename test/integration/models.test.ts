import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { LocalGateway } from '../../infra/local/server';
import { FAKE_ANTHROPIC_MODELS, FAKE_BEDROCK_MODELS, FAKE_COHERE_MODELS, FAKE_GEMINI_MODELS, FAKE_OPENAI_MODELS, startAllFakes, type AllFakes } from '../fakes';
import { FAKE_AWS, manageFakes } from '../support/managed-fakes';
import { call, errorOf, logsOf, startTestGateway } from '../support/gateway';

// GET /v1/models: each provider's own list, read through its own API and answered in
// OpenAI's shape, so `client.models.list()` works whatever the provider.
let gw: LocalGateway;
let fakes: AllFakes;

beforeAll(async () => {
  fakes = await startAllFakes({}, { credentials: FAKE_AWS });
  gw = await startTestGateway();
  await manageFakes(gw, fakes, 'm');
  const down = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'm-down', provider: 'openai', api_key: 'sk-down', custom_host: 'http://127.0.0.1:9/v1' },
  });
  expect(down.status, down.text).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await fakes?.close();
});
beforeEach(() => fakes.reset());

const client = (headers: Record<string, string>) =>
  new OpenAI({ baseURL: gw.baseUrl, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': gw.adminKey, ...headers } });

async function ids(headers: Record<string, string>): Promise<string[]> {
  const out: string[] = [];
  for await (const model of client(headers).models.list()) {
    expect(model.object).toBe('model');
    expect(typeof model.created).toBe('number');
    expect(typeof model.owned_by).toBe('string');
    out.push(model.id);
  }
  return out;
}

describe('GET /v1/models on each provider, through the OpenAI SDK', () => {
  it.each([
    ['m-openai', FAKE_OPENAI_MODELS],
    ['m-claude', FAKE_ANTHROPIC_MODELS],
    ['m-gemini', FAKE_GEMINI_MODELS],
    ['m-bedrock', FAKE_BEDROCK_MODELS.map((m) => m.modelId)],
    ['m-cohere', FAKE_COHERE_MODELS],
  ])('%s: the provider list in OpenAI shape', async (slug, expected) => {
    expect(await ids({ 'x-gateway-provider': `@${slug}` })).toEqual(expected);
  });

  it('reads each list with the provider API: Anthropic limit and version, Gemini key header, Bedrock SigV4 on the control plane', async () => {
    await ids({ 'x-gateway-provider': '@m-claude' });
    const anthropic = fakes.anthropic.last()!;
    expect(anthropic.query.limit).toBe('1000');
    expect(anthropic.headers['x-api-key']).toBe('sk-ant');
    await ids({ 'x-gateway-provider': '@m-gemini' });
    expect(fakes.gemini.last()!.headers['x-goog-api-key']).toBe('gemini-key');
    await ids({ 'x-gateway-provider': '@m-bedrock' });
    expect(fakes.bedrock.last()!.path).toBe('/foundation-models');
    expect(fakes.bedrock.last()!.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/bedrock\/aws4_request/);
  });

  it('translates owner and creation time', async () => {
    const page = await client({ 'x-gateway-provider': '@m-claude' }).models.list();
    expect(page.data[0]).toEqual({ id: FAKE_ANTHROPIC_MODELS[0], object: 'model', created: Date.parse('2025-01-15T00:00:00Z') / 1000, owned_by: 'anthropic' });
    const bedrock = await client({ 'x-gateway-provider': '@m-bedrock' }).models.list();
    expect(bedrock.data[1]!.owned_by).toBe('amazon');
  });

  it('a pass-through key works as for any request', async () => {
    const list = await ids({ 'x-gateway-provider': 'anthropic', authorization: 'Bearer sk-callers', 'x-gateway-custom-host': `${fakes.anthropic.url}/v1` });
    expect(list).toEqual(FAKE_ANTHROPIC_MODELS);
    expect(fakes.anthropic.last()!.headers['x-api-key']).toBe('sk-callers');
  });
});

describe('GET /v1/models with a config', () => {
  it('answers the union of every target, each model once, whatever the strategy', async () => {
    const config = {
      strategy: { mode: 'fallback' },
      targets: [
        { provider: '@m-claude' },
        { strategy: { mode: 'loadbalance' }, targets: [{ provider: '@m-openai' }, { provider: '@m-claude' }, { provider: '@m-gemini' }] },
      ],
    };
    const list = await ids({ 'x-gateway-config': JSON.stringify(config) });
    expect(list).toEqual([...FAKE_ANTHROPIC_MODELS, ...FAKE_OPENAI_MODELS, ...FAKE_GEMINI_MODELS]);
    expect(fakes.anthropic.count('/v1/models')).toBe(2);
  });

  it('names a target that cannot answer and lists the rest; when none can, the failure is the answer', async () => {
    const config = JSON.stringify({ strategy: { mode: 'fallback' }, targets: [{ provider: '@m-down' }, { provider: '@m-cohere' }] });
    const partial = await call(gw, 'GET', '/v1/models', { headers: { 'x-gateway-config': config } });
    expect(partial.status).toBe(200);
    expect(partial.body.data.map((m: { id: string }) => m.id)).toEqual(FAKE_COHERE_MODELS);
    expect(partial.headers.get('x-gateway-models-unavailable')).toBe('@m-down');

    fakes.anthropic.setBehaviour({ status: 529 });
    const failed = await call(gw, 'GET', '/v1/models', { headers: { 'x-gateway-provider': '@m-claude' } });
    expect(failed.status).toBe(529);
    expect(failed.body.type).toBe('error');
  });

  it('a provider without a readable list is a clear 400', async () => {
    const res = await call(gw, 'GET', '/v1/models', {
      headers: {
        'x-gateway-provider': 'vertex-ai',
        authorization: 'Bearer ya29',
        'x-gateway-vertex-project-id': 'p',
        'x-gateway-vertex-region': 'us-central1',
      },
    });
    expect(res.status).toBe(400);
    expect(errorOf(res)).toMatchObject({ param: 'x-gateway-provider', code: 'unsupported_operation' });
  });

  it('no provider named: 400 missing_provider, as on every inference route', async () => {
    const res = await call(gw, 'GET', '/v1/models');
    expect(res.status).toBe(400);
    expect(errorOf(res).code).toBe('missing_provider');
  });

  it('each list request is logged under the route models', async () => {
    const res = await call(gw, 'GET', '/v1/models', { headers: { 'x-gateway-provider': '@m-gemini', 'x-gateway-trace-id': 'models-log' } });
    expect(res.status).toBe(200);
    const logs = await logsOf(gw, 'trace_id=models-log');
    expect(logs.body.data[0]).toMatchObject({ route: 'models', provider: 'google', status: 200 });
  });
});
