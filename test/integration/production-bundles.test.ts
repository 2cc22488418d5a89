import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { startChildGateway } from '../support/child-gateway';
import { startTestGateway } from '../support/gateway';
import { productionBundlesCopy } from '../support/production-bundles';

// The endpoint functions as deployed: minified ESM bundles with split chunks, built with the
// production esbuild settings, served by a gateway process that loads them instead of the
// TypeScript sources (GATEWAY_FUNCTION_BUNDLES). Catches what only bundling breaks:
// CommonJS interop, chunks loaded with import(), dependencies left out.

let bundlesDir: string;
let parent: LocalGateway;
let bundled: Awaited<ReturnType<typeof startChildGateway>>;
let fake: FakeServer;

beforeAll(async () => {
  bundlesDir = await productionBundlesCopy();
  fake = await startOpenAIFake();
  parent = await startTestGateway();
  bundled = await startChildGateway(parent, { GATEWAY_FUNCTION_BUNDLES: bundlesDir });
}, 120_000);
afterAll(async () => {
  await bundled?.stop();
  await parent?.stop();
  await fake?.close();
  if (bundlesDir) rmSync(bundlesDir, { recursive: true, force: true });
});

async function admin(method: string, path: string, body?: unknown) {
  const res = await fetch(`${bundled.url}/v1${path}`, {
    method,
    headers: { 'x-gateway-api-key': bundled.adminKey, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

const client = (headers: Record<string, string>) =>
  new OpenAI({ baseURL: `${bundled.url}/v1`, apiKey: 'sk-bundle-test', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': bundled.adminKey, ...headers } });

describe('the production bundles, served by the local runtime', () => {
  it('answer a chat completion, whole and streamed, through the OpenAI SDK', async () => {
    const openai = client({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${fake.url}/v1` });
    const whole = await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello bundle' }] });
    expect(whole.choices[0]!.message.content).toBe('echo: hello bundle');
    let text = '';
    for await (const chunk of await openai.chat.completions.create({
      model: 'gpt-4o-mini',
      stream: true,
      messages: [{ role: 'user', content: 'stream bundle' }],
    })) {
      text += chunk.choices[0]?.delta?.content ?? '';
    }
    expect(text).toBe('echo: stream bundle');
  });

  it('store a managed provider (encrypted through KMS) and use it by slug', async () => {
    const created = await admin('POST', '/providers', {
      slug: 'bundled-oa',
      provider: 'openai',
      api_key: 'sk-managed-in-bundle',
      custom_host: `${fake.url}/v1`,
    });
    expect(created.status).toBe(200);
    expect(JSON.stringify(created.body)).not.toContain('sk-managed-in-bundle');
    const res = await client({ 'x-gateway-provider': '@bundled-oa' }).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'managed' }],
    });
    expect(res.choices[0]!.message.content).toBe('echo: managed');
    expect(fake.last()!.headers.authorization).toBe('Bearer sk-managed-in-bundle');
  });

  it("load the tokenizer's chunks on the first local token count (cl100k_base and o200k_base)", async () => {
    const count = async (model: string) => {
      const res = await fetch(`${bundled.url}/v1/messages/count_tokens`, {
        method: 'POST',
        headers: { 'x-gateway-api-key': bundled.adminKey, 'x-gateway-provider': 'openai', authorization: 'Bearer sk-x', 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'こんにちは世界' }] }),
      });
      return { status: res.status, method: res.headers.get('x-gateway-token-count-method'), body: (await res.json()) as unknown };
    };
    const calls = fake.count();
    // "こんにちは世界" is 2 tokens on o200k_base, 4 on cl100k_base; "user" 1; 3 per message and 3 to prime the reply.
    expect(await count('gpt-4o-mini')).toEqual({ status: 200, method: 'tokenizer', body: { input_tokens: 9 } });
    expect(await count('gpt-4')).toEqual({ status: 200, method: 'tokenizer', body: { input_tokens: 11 } });
    expect(fake.count()).toBe(calls);
  });

  it('load the guardrail evaluator and RE2 chunks on demand and block with 446', async () => {
    const guardrail = await admin('POST', '/guardrails', {
      name: 'No ticket numbers',
      checks: [{ id: 'default.regexMatch', parameters: { rule: 'TICKET-\\d{4}', not: true } }],
      actions: { onFail: 'block', deny: true },
    });
    expect(guardrail.status).toBe(200);
    const config = JSON.stringify({ provider: 'openai', custom_host: `${fake.url}/v1`, api_key: 'sk-x', input_guardrails: [guardrail.body.id] });
    const blocked = await fetch(`${bundled.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-gateway-api-key': bundled.adminKey, 'x-gateway-config': config, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'see TICKET-1234' }] }),
    });
    expect(blocked.status).toBe(446);
    const passed = await client({ 'x-gateway-config': config }).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'no ticket here' }],
    });
    expect(passed.choices[0]!.message.content).toBe('echo: no ticket here');
  });

  it('start each function on its first invocation, as Lambda does: no bundle is loaded before its first request', async () => {
    // Replaced once the gateway runs: served only if the prompts function was not loaded at its start.
    const handler = `export const handler = awslambda.streamifyResponse(async (_event, stream) => {
      awslambda.HttpResponseStream.from(stream, { statusCode: 200, headers: { 'content-type': 'application/json' } }).end(JSON.stringify({ loaded: 'on first use' }));
    });`;
    writeFileSync(join(bundlesDir, 'prompts', 'index.mjs'), handler);
    const res = await fetch(`${bundled.url}/v1/prompts`, { headers: { 'x-gateway-api-key': bundled.adminKey } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ loaded: 'on first use' });
  });
});
