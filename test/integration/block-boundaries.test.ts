import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { LocalGateway } from '../../infra/local/server';
import { startAllFakes, type AllFakes } from '../fakes';
import { FAKE_AWS, manageFakes } from '../support/managed-fakes';
import { call, startTestGateway } from '../support/gateway';

// Separate text blocks stay separate on every translation: a coding agent's
// `<system-reminder>` block must not be glued to the prompt after it. Providers that take
// content parts get one part per block; those that take one string get the blocks joined
// by a blank line.
let gw: LocalGateway;
let fakes: AllFakes;

beforeAll(async () => {
  fakes = await startAllFakes({}, { credentials: FAKE_AWS });
  gw = await startTestGateway({ env: { AUTH_CACHE_TTL_MS: '0' } });
  await manageFakes(gw, fakes, 'bb');
  const mistral = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'bb-mistral', provider: 'mistral-ai', api_key: 'sk-mistral', custom_host: `${fakes.openai.url}/v1` },
  });
  expect(mistral.status, mistral.text).toBe(200);
});
afterAll(async () => {
  await gw?.stop();
  await fakes?.close();
});
beforeEach(() => fakes.reset());

const REMINDER = '<system-reminder>\nThe user opened src/app.ts.\n</system-reminder>';
const PROMPT = 'first block. What does this file do?';
const SYSTEM: Anthropic.TextBlockParam[] = [
  { type: 'text', text: 'You are a coding agent.' },
  { type: 'text', text: 'Answer tersely.' },
];

const anthropic = (headers: Record<string, string>) =>
  new Anthropic({ baseURL: gw.url, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': gw.adminKey, ...headers } });

const agentTurn = (model: string): Anthropic.MessageCreateParamsNonStreaming => ({
  model,
  max_tokens: 100,
  system: SYSTEM,
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: REMINDER },
        { type: 'text', text: PROMPT },
      ],
    },
  ],
});

const textParts = (...texts: string[]) => texts.map((text) => ({ type: 'text', text }));

describe('/v1/messages through @anthropic-ai/sdk', () => {
  it('OpenAI-backed: the reminder and the prompt arrive as two text parts, the system blocks as two', async () => {
    const message = await anthropic({ 'x-gateway-provider': '@bb-openai' }).messages.create(agentTurn('gpt-4o-mini'));
    expect(message.type).toBe('message');
    const sent = fakes.openai.last()!.body as { messages: Array<{ role: string; content: unknown }> };
    expect(sent.messages).toEqual([
      { role: 'system', content: textParts(...SYSTEM.map((b) => b.text)) },
      { role: 'user', content: textParts(REMINDER, PROMPT) },
    ]);
  });

  it('another OpenAI-compatible provider: the user blocks stay two parts, the system blocks arrive as one string, a blank line apart', async () => {
    await anthropic({ 'x-gateway-provider': '@bb-mistral' }).messages.create(agentTurn('mistral-small-latest'));
    const sent = fakes.openai.last()!.body as { messages: Array<{ role: string; content: unknown }> };
    expect(sent.messages).toEqual([
      { role: 'system', content: 'You are a coding agent.\n\nAnswer tersely.' },
      { role: 'user', content: textParts(REMINDER, PROMPT) },
    ]);
  });

  it('Anthropic-backed, translated (a mixed config): two system blocks and two user blocks reach Anthropic', async () => {
    const config = JSON.stringify({ strategy: { mode: 'fallback' }, targets: [{ provider: '@bb-claude' }, { provider: '@bb-openai' }] });
    await anthropic({ 'x-gateway-config': config }).messages.create(agentTurn('claude-haiku-4-5'));
    expect(fakes.openai.count()).toBe(0);
    const sent = fakes.anthropic.last()!.body as { system: unknown; messages: unknown };
    expect(sent.system).toEqual(textParts(...SYSTEM.map((b) => b.text)));
    expect(sent.messages).toEqual([{ role: 'user', content: textParts(REMINDER, PROMPT) }]);
  });

  it('Bedrock (Converse): one text block per part, system and user', async () => {
    await anthropic({ 'x-gateway-provider': '@bb-bedrock' }).messages.create(agentTurn('anthropic.claude-3-5-sonnet-20240620-v1:0'));
    const sent = fakes.bedrock.last()!.body as { system: unknown; messages: unknown };
    expect(sent.system).toEqual(SYSTEM.map((b) => ({ text: b.text })));
    expect(sent.messages).toEqual([{ role: 'user', content: [{ text: REMINDER }, { text: PROMPT }] }]);
  });

  it('Gemini: one part per block, in systemInstruction and in the user turn', async () => {
    await anthropic({ 'x-gateway-provider': '@bb-gemini' }).messages.create(agentTurn('gemini-2.5-flash'));
    const sent = fakes.gemini.last()!.body as { systemInstruction: { parts: unknown }; contents: unknown };
    expect(sent.systemInstruction.parts).toEqual(SYSTEM.map((b) => ({ text: b.text })));
    expect(sent.contents).toEqual([{ role: 'user', parts: [{ text: REMINDER }, { text: PROMPT }] }]);
  });

  it('a string-only target (Cohere system, Bedrock tool result): the blocks joined by a blank line, never glued', async () => {
    await anthropic({ 'x-gateway-provider': '@bb-cohere' }).messages.create(agentTurn('command-r-plus'));
    const cohere = fakes.cohere.last()!.body as { messages: Array<{ role: string; content: unknown }> };
    expect(cohere.messages[0]).toEqual({ role: 'system', content: 'You are a coding agent.\n\nAnswer tersely.' });

    await anthropic({ 'x-gateway-provider': '@bb-bedrock' }).messages.create({
      model: 'anthropic.claude-3-5-sonnet-20240620-v1:0',
      max_tokens: 100,
      tools: [{ name: 'read_file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } }],
      messages: [
        { role: 'user', content: 'Read src/app.ts' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'src/app.ts' } }] },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_1',
              content: [
                { type: 'text', text: 'export const app = 1;' },
                { type: 'text', text: REMINDER },
              ],
            },
          ],
        },
      ],
    });
    const bedrock = fakes.bedrock.last()!.body as { messages: Array<{ content: Array<Record<string, any>> }> };
    const result = bedrock.messages.at(-1)!.content[0]!.toolResult;
    expect(result.content).toEqual([{ text: `export const app = 1;\n\n${REMINDER}` }]);
  });
});

describe('/v1/responses through the openai SDK', () => {
  const client = (slug: string) =>
    new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: 'unused',
      maxRetries: 0,
      defaultHeaders: { 'x-gateway-api-key': gw.adminKey, 'x-gateway-provider': `@${slug}` },
    });
  const input: OpenAI.Responses.ResponseInput = [
    {
      role: 'user',
      content: [
        { type: 'input_text', text: REMINDER },
        { type: 'input_text', text: PROMPT },
      ],
    },
  ];

  it('OpenAI-shaped upstream (translated): two input_text parts arrive as two text parts', async () => {
    await client('bb-mistral').responses.create({ model: 'mistral-small-latest', input, store: false });
    const sent = fakes.openai.last()!.body as { messages: Array<{ role: string; content: unknown }> };
    expect(sent.messages.at(-1)).toEqual({ role: 'user', content: textParts(REMINDER, PROMPT) });
  });

  it('Anthropic-backed: two input_text parts arrive as two text blocks', async () => {
    await client('bb-claude').responses.create({ model: 'claude-haiku-4-5', input, store: false });
    const sent = fakes.anthropic.last()!.body as { messages: unknown };
    expect(sent.messages).toEqual([{ role: 'user', content: textParts(REMINDER, PROMPT) }]);
  });
});
