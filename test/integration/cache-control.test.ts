import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { LocalGateway } from '../../infra/local/server';
import { startAllFakes, type AllFakes } from '../fakes';
import { FAKE_AWS, manageFakes } from '../support/managed-fakes';
import { call, startTestGateway } from '../support/gateway';

// Anthropic's prompt-cache marks (`cache_control`) reach Anthropic where the caller put
// them (top level, system blocks, content blocks, tool results, tools) on every path:
// native, translated from Messages, and from an OpenAI-shaped chat request carrying them on
// its parts and tools. Bedrock (Converse) gets a cachePoint after each marked block; an
// OpenAI-shaped provider gets the request without them.
let gw: LocalGateway;
let fakes: AllFakes;

beforeAll(async () => {
  fakes = await startAllFakes({}, { credentials: FAKE_AWS });
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0' } });
  await manageFakes(gw, fakes, 'cc');
});
afterAll(async () => {
  await gw?.stop();
  await fakes?.close();
});
beforeEach(() => fakes.reset());

const EPHEMERAL = { type: 'ephemeral' } as const;
const HOUR = { type: 'ephemeral', ttl: '1h' } as const;
const readFile: Anthropic.Tool = {
  name: 'read_file',
  description: 'Read a file',
  input_schema: { type: 'object', properties: { path: { type: 'string' } } },
  cache_control: EPHEMERAL,
};

/** A coding agent's request: marks on the system prompt, the tools, a tool result and the newest user block. */
const agentRequest = (model: string): Anthropic.MessageCreateParamsNonStreaming => ({
  model,
  max_tokens: 100,
  cache_control: EPHEMERAL,
  system: [
    { type: 'text', text: 'You are a coding agent.' },
    { type: 'text', text: 'Project rules: be terse.', cache_control: HOUR },
  ],
  tools: [readFile],
  messages: [
    { role: 'user', content: 'Read src/app.ts' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'src/app.ts' } }] },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'export const app = 1;', cache_control: EPHEMERAL }] },
        { type: 'text', text: 'What does it export?', cache_control: EPHEMERAL },
      ],
    },
  ],
});

const anthropic = (headers: Record<string, string>) =>
  new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': gw.adminKey, ...headers } });

/** What Anthropic must receive for agentRequest, whichever way it came. */
function expectMarksAtAnthropic(sent: any) {
  expect(sent.cache_control).toEqual(EPHEMERAL);
  expect(sent.system).toEqual([
    { type: 'text', text: 'You are a coding agent.' },
    { type: 'text', text: 'Project rules: be terse.', cache_control: HOUR },
  ]);
  expect(sent.tools).toEqual([readFile]);
  // The last user turn may come as two (chat puts tool results in their own message); Anthropic joins consecutive user turns.
  const afterToolUse = sent.messages.slice(2);
  expect(afterToolUse.every((m: { role: string }) => m.role === 'user')).toBe(true);
  expect(afterToolUse.flatMap((m: { content: unknown[] }) => m.content)).toEqual([
    { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'export const app = 1;', cache_control: EPHEMERAL }] },
    { type: 'text', text: 'What does it export?', cache_control: EPHEMERAL },
  ]);
}

describe('/v1/messages through @anthropic-ai/sdk', () => {
  it('Anthropic, native: the body reaches Anthropic as sent, marks included', async () => {
    const request = agentRequest('claude-haiku-4-5');
    await anthropic({ 'x-gateway-provider': '@cc-claude' }).messages.create(request);
    expect(fakes.anthropic.last()!.body).toEqual(request);
  });

  it('Anthropic, translated (a mixed config): every mark at its block', async () => {
    const config = JSON.stringify({ strategy: { mode: 'fallback' }, targets: [{ provider: '@cc-claude' }, { provider: '@cc-openai' }] });
    const message = await anthropic({ 'x-gateway-config': config }).messages.create(agentRequest('claude-haiku-4-5'));
    expect(message.type).toBe('message');
    expect(fakes.openai.count()).toBe(0);
    expectMarksAtAnthropic(fakes.anthropic.last()!.body);
  });

  it('Bedrock (Converse): a cachePoint after each marked system block, tool, tool result and content block', async () => {
    await anthropic({ 'x-gateway-provider': '@cc-bedrock' }).messages.create(agentRequest('anthropic.claude-3-5-sonnet-20240620-v1:0'));
    const sent = fakes.bedrock.last()!.body as any;
    const point = { cachePoint: { type: 'default' } };
    expect(sent.system).toEqual([{ text: 'You are a coding agent.' }, { text: 'Project rules: be terse.' }, point]);
    expect(sent.toolConfig.tools).toEqual([
      { toolSpec: { name: 'read_file', description: 'Read a file', inputSchema: { json: readFile.input_schema } } },
      point,
    ]);
    expect(sent.messages.at(-1).content).toEqual([
      { toolResult: { toolUseId: 'toolu_1', content: [{ text: 'export const app = 1;' }] } },
      point,
      { text: 'What does it export?' },
      point,
    ]);
  });

  it('an OpenAI-shaped provider gets no cache_control (OpenAI refuses unknown fields)', async () => {
    const message = await anthropic({ 'x-gateway-provider': '@cc-openai' }).messages.create(agentRequest('gpt-4o-mini'));
    expect(message.type).toBe('message');
    const raw = fakes.openai.last()!.rawBody.toString('utf8');
    expect(raw).toContain('What does it export?');
    expect(raw).not.toContain('cache_control');
  });
});

describe('/v1/chat/completions through the openai SDK: cache_control on parts and tools (as Portkey takes it)', () => {
  const client = new OpenAI({
    baseURL: 'http://placeholder/v1',
    apiKey: 'unused',
    maxRetries: 0,
  });
  const chatRequest = {
    model: 'claude-haiku-4-5',
    cache_control: EPHEMERAL,
    messages: [
      {
        role: 'system',
        content: [
          { type: 'text', text: 'You are a coding agent.' },
          { type: 'text', text: 'Project rules: be terse.', cache_control: HOUR },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'What does it export?', cache_control: EPHEMERAL }] },
    ],
    tools: [{ type: 'function', function: { name: 'read_file', description: 'Read a file', parameters: readFile.input_schema }, cache_control: EPHEMERAL }],
  } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;

  it('Anthropic receives each mark at its block, tool and top level', async () => {
    const api = client.withOptions({ baseURL: `${gw.url}/v1`, defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@cc-claude' } });
    const completion = await api.chat.completions.create(chatRequest);
    expect(completion.object).toBe('chat.completion');
    const sent = fakes.anthropic.last()!.body as any;
    expect(sent.cache_control).toEqual(EPHEMERAL);
    expect(sent.system).toEqual([
      { type: 'text', text: 'You are a coding agent.' },
      { type: 'text', text: 'Project rules: be terse.', cache_control: HOUR },
    ]);
    expect(sent.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'What does it export?', cache_control: EPHEMERAL }] }]);
    expect(sent.tools).toEqual([readFile]);
  });

  it('OpenAI receives the request without them', async () => {
    const api = client.withOptions({ baseURL: `${gw.url}/v1`, defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': '@cc-openai' } });
    await api.chat.completions.create({ ...chatRequest, model: 'gpt-4o-mini' });
    const raw = fakes.openai.last()!.rawBody.toString('utf8');
    expect(raw).toContain('Project rules: be terse.');
    expect(raw).not.toContain('cache_control');
  });
});

/** An Anthropic answer as Bedrock InvokeModel and Vertex AI rawPredict return it. */
const anthropicAnswer = {
  id: 'msg_partner',
  type: 'message',
  role: 'assistant',
  model: 'claude',
  content: [{ type: 'text', text: 'It exports app.' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 10, output_tokens: 4, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
};

/** The Anthropic body a Claude model on Bedrock or Vertex AI takes: no model, their `anthropic_version`. */
function partnerBody(version: string): Record<string, unknown> {
  const { model: _, ...body } = agentRequest('unused');
  return { ...body, anthropic_version: version };
}

describe('Claude on Bedrock InvokeModel and Vertex AI rawPredict (the generic proxy)', () => {
  it('Bedrock InvokeModel: the Anthropic body, marks included, reaches Bedrock unchanged (signed)', async () => {
    fakes.bedrock.setBehaviour({ respond: () => ({ status: 200, body: anthropicAnswer }) });
    const body = partnerBody('bedrock-2023-05-31');
    const res = await call(gw, 'POST', '/v1/model/anthropic.claude-sonnet-4-5-20250929-v1:0/invoke', {
      headers: { 'x-gateway-provider': '@cc-bedrock' },
      body,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.content).toEqual(anthropicAnswer.content);
    const sent = fakes.bedrock.last()!;
    expect(sent.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 /);
    expect(sent.body).toEqual(body);
  });

  describe('Vertex AI', () => {
    let vertex: Server;
    let received: { url: string; authorization?: string; body: unknown }[] = [];
    beforeAll(async () => {
      vertex = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          received.push({ url: req.url ?? '', authorization: req.headers.authorization, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(anthropicAnswer));
        });
      });
      await new Promise<void>((resolve) => vertex.listen(0, '127.0.0.1', resolve));
    });
    afterAll(() => new Promise<void>((resolve) => vertex.close(() => resolve())));

    it('rawPredict: the Anthropic body, marks included, reaches Vertex AI unchanged', async () => {
      received = [];
      const body = partnerBody('vertex-2023-10-16');
      const port = (vertex.address() as AddressInfo).port;
      const res = await call(gw, 'POST', '/v1/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict', {
        headers: {
          'x-gateway-provider': 'vertex-ai',
          authorization: 'Bearer ya29.vertex-token',
          'x-gateway-custom-host': `http://127.0.0.1:${port}/v1`,
          'x-gateway-vertex-project-id': 'my-project',
          'x-gateway-vertex-region': 'us-east5',
        },
        body,
      });
      expect(res.status, res.text).toBe(200);
      expect(received).toHaveLength(1);
      expect(received[0]!.url).toBe('/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict');
      expect(received[0]!.authorization).toBe('Bearer ya29.vertex-token');
      expect(received[0]!.body).toEqual(body);
    });
  });
});
