import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { type FakeServer, startAnthropicFake, startOpenAIFake } from '../fakes';
import { call, startTestGateway } from '../support/gateway';
import { answerProblem, sweep } from '../support/sweep';

/**
 * Every request header the gateway reads (docs/api.md, "Request headers", and the provider
 * settings), sent with values a careless or hostile caller sends (empty, half JSON, numbers
 * out of range, escapes, a metadata address, hop-by-hop names to forward, 7 KB), on the model
 * routes in turn, streamed or not, to a provider passed through and to one translated: a 4xx
 * error object or a success, never a 5xx, and the gateway serves on.
 */

const HEADERS = [
  'x-gateway-provider',
  'x-gateway-virtual-key',
  'x-gateway-config',
  'x-gateway-custom-host',
  'x-gateway-trace-id',
  'x-gateway-metadata',
  'x-gateway-request-timeout',
  'x-gateway-mcp-servers',
  'x-gateway-forward-headers',
  'x-gateway-cache-namespace',
  'x-gateway-cache-force-refresh',
  'x-gateway-span-id',
  'x-gateway-parent-span-id',
  'x-gateway-span-name',
  'x-gateway-batch-mode',
  'x-gateway-azure-resource-name',
  'x-gateway-azure-deployment-id',
  'x-gateway-azure-api-version',
  'x-gateway-vertex-project-id',
  'x-gateway-vertex-region',
  'x-gateway-aws-region',
  'x-gateway-aws-access-key-id',
  'x-gateway-watsonx-iam-url',
  'idempotency-key',
  'authorization',
  'x-api-key',
  'anthropic-version',
  'anthropic-beta',
  'x-goog-api-key',
  'content-type',
  'accept',
  'accept-encoding',
  'content-encoding',
];

const VALUES = [
  '',
  ' ',
  'x',
  '{"a":',
  '[]',
  '{}',
  'null',
  '0',
  '-1',
  '1e309',
  'NaN',
  '%00',
  '..%2F..%2F',
  'http://169.254.169.254/latest',
  'host, content-length, transfer-encoding',
  '{"provider":"openai","custom_host":"http://127.0.0.1:1"}',
  '{"_user":{"a":1}}',
  'a,b,,c',
  '\xff\xfe',
  'A'.repeat(7000),
];

let gw: LocalGateway;
let openai: FakeServer;
let anthropic: FakeServer;
beforeAll(async () => {
  [gw, openai, anthropic] = await Promise.all([startTestGateway(), startOpenAIFake(), startAnthropicFake()]);
});
afterAll(async () => {
  await Promise.all([gw?.stop(), openai?.close(), anthropic?.close()]);
});

const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const ROUTES: Array<{ path: string; body: unknown }> = [
  { path: '/v1/chat/completions', body: CHAT },
  { path: '/v1/chat/completions', body: { ...CHAT, stream: true } },
  { path: '/v1/responses', body: { model: 'gpt-4o-mini', input: 'hi', stream: true } },
  { path: '/v1/messages', body: { model: 'claude-3-5-haiku-latest', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] } },
  { path: '/v1/embeddings', body: { model: 'text-embedding-3-small', input: 'hi' } },
  { path: '/v1/v1/chat/completions', body: CHAT },
];

const providers = () => [
  { 'x-gateway-provider': 'openai', authorization: 'Bearer sk-headers', 'x-gateway-custom-host': `${openai.url}/v1` },
  { 'x-gateway-provider': 'anthropic', authorization: 'Bearer sk-ant-headers', 'x-gateway-custom-host': `${anthropic.url}/v1` },
];

async function send(path: string, body: unknown, headers: Record<string, string>): Promise<string | undefined> {
  const res = await fetch(gw.url + path, {
    method: 'POST',
    headers: { 'x-gateway-api-key': gw.adminKey, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await res.text();
  // A header that empties the custom host sends the request to the real provider: unreachable here.
  if (res.status === 502 && text.includes('Could not reach the upstream host')) return undefined;
  return answerProblem(res.status, text, `${res.status} ${path} ${JSON.stringify(headers).slice(0, 200)} -> ${text.slice(0, 300)}`);
}

describe('malformed request headers on the model routes', () => {
  it('each header with each bad value: a 4xx error object or a success, never a 5xx', { timeout: 300_000 }, async () => {
    // Each header and value on one route (of six, in turn), through one provider (of two, in turn).
    const probes = HEADERS.flatMap((name, h) =>
      VALUES.map((value, v) => {
        const provider = providers()[(h + v + Math.floor(v / 2)) % 2]!;
        return { ...ROUTES[(h + v) % ROUTES.length]!, headers: { ...provider, [name]: value } };
      }),
    );
    const failures = await sweep(probes, (p) =>
      send(p.path, p.body, p.headers).catch((err: Error) => `${err.message} ${p.path} ${JSON.stringify(p.headers).slice(0, 200)}`),
    );
    expect(failures, `${failures.length} of ${probes.length} answers`).toEqual([]);
    expect((await call(gw, 'GET', '/v1/workspaces')).status).toBe(200);
  });
});
