import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { type FakeServer, startAnthropicFake, startOpenAIFake } from '../fakes';
import { call, startTestGateway } from '../support/gateway';
import { answerProblem, sweep } from '../support/sweep';

/**
 * Every operation of docs/openapi.json, sent what a careless or hostile caller sends: bodies
 * that are not JSON, not objects, nested 400 deep or carrying `__proto__`; each documented
 * body property with a value of the wrong kind (null, numbers out of range, a 70 KB string,
 * arrays, objects); ids that are unknown, 600 characters long or hold escapes; list queries
 * with bad limits, orders and cursors; other content types. The model operations get each
 * probe also with a provider (a managed OpenAI one, and Anthropic translated), so that bodies
 * reach validation and translation and some reach the fakes. The answer is never a 5xx and
 * every 4xx is an error object with a message (docs/api.md, "Errors"); afterwards the
 * gateway still serves. The per-route tests check which field each message names.
 */

interface Schema {
  $ref?: string;
  properties?: Record<string, unknown>;
}
interface Operation {
  method: string;
  path: string;
  requestBody?: { content?: Record<string, { schema?: Schema }> };
}

const doc = JSON.parse(readFileSync('docs/openapi.json', 'utf8')) as {
  paths: Record<string, Record<string, Omit<Operation, 'method' | 'path'>>>;
  components: { schemas: Record<string, Schema> };
};
const resolveSchema = (s: Schema | undefined) => (s?.$ref ? doc.components.schemas[s.$ref.split('/').pop()!] : s);

const OPERATIONS: Operation[] = Object.entries(doc.paths).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
    .map(([method, op]) => ({ ...op, method: method.toUpperCase(), path })),
);

const nested = (depth: number): unknown => (depth === 0 ? 1 : { a: nested(depth - 1) });
const BODIES = [
  '{"model":',
  '[]',
  'null',
  '"text"',
  '12',
  '{}',
  JSON.stringify(nested(400)),
  '{"__proto__":{"role":"org-admin"},"constructor":{"prototype":{"x":1}}}',
];
const WRONG_VALUES: unknown[] = [null, 7, -1, 1e308, '', 'x', true, [], {}, [1, 'a', null], { a: { b: [] } }, 'A'.repeat(70_000)];
const IDS = ['malformed-unknown-id', 'a'.repeat(600), '..%2F..%2F%00%C3%BC'];
const LIST_QUERIES = ['?limit=-1', '?limit=abc', '?limit=1e9', '?after=%00', '?order=sideways', `?before=${'z'.repeat(3000)}`, '?limit=1&limit=2'];

interface Probe {
  method: string;
  url: string;
  body?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

function probesOf(op: Operation): Probe[] {
  const templated = op.path.includes('{');
  const urls = templated ? IDS.map((id) => op.path.replace(/\{[^}]+\}/g, id)) : [op.path];
  if (op.method === 'GET' || op.method === 'DELETE') {
    return [...urls.map((url) => ({ method: op.method, url })), ...(templated ? [] : LIST_QUERIES.map((q) => ({ method: op.method, url: op.path + q })))];
  }
  const [first, ...others] = urls as [string, ...string[]];
  const schema = resolveSchema(op.requestBody?.content?.['application/json']?.schema);
  // Two wrong values per property, taken in turn from the list, so the operation's properties
  // together meet every kind.
  const wrongTyped = Object.keys(schema?.properties ?? {}).flatMap((name, i) =>
    [0, 1].map((k) => JSON.stringify({ [name]: WRONG_VALUES[(2 * i + k) % WRONG_VALUES.length] })),
  );
  return [
    ...[...BODIES, ...wrongTyped].map((body) => ({ method: op.method, url: first, body })),
    { method: op.method, url: first, body: 'model=x', contentType: 'application/x-www-form-urlencoded' },
    { method: op.method, url: first, body: '{"model":"x"}', contentType: 'text/plain' },
    ...others.map((url) => ({ method: op.method, url, body: '{}' })),
  ];
}

/** Operations that reach a model provider: without one named they stop at "no provider given". */
const MODEL_ROUTES = /^\/(v1beta\/|v1\/(chat|responses|messages(?!\/batches)|embeddings|models\/|rerank|audio|\{proxy\}))/;

let gw: LocalGateway;
let openai: FakeServer;
let anthropic: FakeServer;
beforeAll(async () => {
  [gw, openai, anthropic] = await Promise.all([startTestGateway(), startOpenAIFake(), startAnthropicFake()]);
  const created = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'malformed-openai', provider: 'openai', api_key: 'sk-malformed', custom_host: `${openai.url}/v1` },
  });
  expect(created.status, created.text).toBe(200);
});
afterAll(async () => {
  await Promise.all([gw?.stop(), openai?.close(), anthropic?.close()]);
});

/**
 * The model operations' probes again with a provider, so that bodies get past routing to
 * validation and translation: a managed OpenAI provider (passed through or translated to
 * OpenAI) and Anthropic named per request (translated to Messages).
 */
function withProviders(probe: Probe): Probe[] {
  return [
    { ...probe, headers: { 'x-gateway-provider': '@malformed-openai' } },
    { ...probe, headers: { 'x-gateway-provider': 'anthropic', 'x-gateway-custom-host': `${anthropic.url}/v1`, authorization: 'Bearer sk-ant-malformed' } },
  ];
}

async function send(probe: Probe): Promise<string | undefined> {
  const res = await fetch(gw.url + probe.url, {
    method: probe.method,
    headers: { 'x-gateway-api-key': gw.adminKey, 'content-type': probe.contentType ?? 'application/json', ...probe.headers },
    body: probe.body,
  });
  const text = await res.text();
  return answerProblem(
    res.status,
    text,
    `${res.status} ${probe.method} ${probe.url.slice(0, 120)} ${probe.headers?.['x-gateway-provider'] ?? ''} ${probe.body?.slice(0, 80) ?? ''} -> ${text.slice(0, 300)}`,
  );
}

/** A valid request of each model operation, to be spoiled one field at a time. */
const VALID: Array<{ path: string; body: Record<string, unknown>; fields: string[] }> = [
  {
    path: '/v1/chat/completions',
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] },
    fields: [
      'model',
      'messages',
      'temperature',
      'top_p',
      'n',
      'stop',
      'max_tokens',
      'max_completion_tokens',
      'tools',
      'tool_choice',
      'response_format',
      'stream',
      'stream_options',
      'logprobs',
      'top_logprobs',
      'seed',
      'user',
      'metadata',
      'presence_penalty',
      'frequency_penalty',
      'logit_bias',
      'parallel_tool_calls',
      'reasoning_effort',
      'modalities',
      'audio',
      'prediction',
      'store',
      'service_tier',
    ],
  },
  {
    path: '/v1/responses',
    body: { model: 'gpt-4o-mini', input: 'hi' },
    fields: [
      'model',
      'input',
      'instructions',
      'tools',
      'tool_choice',
      'text',
      'reasoning',
      'max_output_tokens',
      'previous_response_id',
      'store',
      'include',
      'stream',
      'temperature',
      'top_p',
      'metadata',
      'parallel_tool_calls',
      'truncation',
      'background',
    ],
  },
  { path: '/v1/responses/input_tokens', body: { model: 'gpt-4o-mini', input: 'hi' }, fields: ['model', 'input', 'instructions', 'tools', 'text', 'reasoning'] },
  {
    path: '/v1/messages',
    body: { model: 'claude-3-5-haiku-latest', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
    fields: [
      'model',
      'max_tokens',
      'messages',
      'system',
      'tools',
      'tool_choice',
      'temperature',
      'top_p',
      'top_k',
      'stop_sequences',
      'stream',
      'metadata',
      'thinking',
      'service_tier',
    ],
  },
  {
    path: '/v1/messages/count_tokens',
    body: { model: 'claude-3-5-haiku-latest', messages: [{ role: 'user', content: 'hi' }] },
    fields: ['model', 'messages', 'system', 'tools', 'thinking'],
  },
  { path: '/v1/embeddings', body: { model: 'text-embedding-3-small', input: 'hi' }, fields: ['model', 'input', 'dimensions', 'encoding_format', 'user'] },
  {
    path: '/v1/rerank',
    body: { model: 'rerank-v3.5', query: 'q', documents: ['a', 'b'] },
    fields: ['model', 'query', 'documents', 'top_n', 'return_documents', 'max_chunks_per_doc'],
  },
  {
    path: '/v1beta/models/gemini-2.0-flash:generateContent',
    body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
    fields: ['contents', 'systemInstruction', 'tools', 'toolConfig', 'generationConfig', 'safetySettings', 'cachedContent'],
  },
];
/** Messages of the wrong shape, for the operations that take a list of them. */
const BAD_MESSAGES: unknown[] = [
  [null],
  [{}],
  [{ role: 'user' }],
  [{ role: 'user', content: 7 }],
  [{ role: 'robot', content: 'x' }],
  [{ role: 'user', content: [{ type: 'image_url' }] }],
  [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'not a url' } }] }],
  [{ role: 'assistant', tool_calls: 'x' }],
  [{ role: 'assistant', tool_calls: [{ id: 1, function: null }] }],
  [{ role: 'tool', content: 'x' }],
  [{ role: 'user', content: [{ type: 'tool_result' }] }],
  [],
];

function spoiledProbes(): Probe[] {
  return VALID.flatMap(({ path, body, fields }) => {
    const spoiled = fields.flatMap((field, i) => [0, 1, 2, 3].map((k) => ({ ...body, [field]: WRONG_VALUES[(4 * i + k) % WRONG_VALUES.length] })));
    const messages = 'messages' in body ? BAD_MESSAGES.map((m) => ({ ...body, messages: m })) : [];
    return [...spoiled, ...messages].flatMap((b) => withProviders({ method: 'POST', url: path, body: JSON.stringify(b) }));
  });
}

/** Every probe sent, 8 at a time; what went wrong. */
const failuresOf = (probes: Probe[]) => sweep(probes, send);

describe('malformed input on every documented operation', () => {
  it('is answered with a 4xx error object (or accepted), never a 5xx; the gateway serves on', { timeout: 240_000 }, async () => {
    const probes = OPERATIONS.flatMap((op) => {
      const own = probesOf(op);
      return MODEL_ROUTES.test(op.path) ? [...own, ...own.flatMap(withProviders)] : own;
    });
    expect(OPERATIONS.length).toBeGreaterThan(100);
    const failures = await failuresOf(probes);
    expect(failures, `${failures.length} of ${probes.length} answers`).toEqual([]);
    // The provider probes got past routing: some bodies passed validation and were sent on.
    expect(openai.requests.length).toBeGreaterThan(0);
    expect(anthropic.requests.length).toBeGreaterThan(0);
    const after = await call(gw, 'GET', '/v1/workspaces');
    expect(after.status).toBe(200);
  });

  it('a valid model request with one field spoiled, through a provider: a 4xx or a success, never a 5xx', { timeout: 240_000 }, async () => {
    const probes = spoiledProbes();
    const failures = await failuresOf(probes);
    expect(failures, `${failures.length} of ${probes.length} answers`).toEqual([]);
  });
});
