import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { eventFrame } from '../fakes';
import { startTestGateway } from '../support/gateway';
import { pathsOf, spoil, spoiled, WRONG, wrongAt } from '../support/spoil';
import { sweep } from '../support/sweep';

/**
 * What a provider answers, spoiled at one place however deep (removed, null, a number, a
 * string, a list, an object, `[null]`): a full answer of each family (OpenAI, Anthropic,
 * Gemini, Bedrock, Cohere) with text, thinking and a tool call, and each event of a full
 * stream of each (Bedrock's as AWS event-stream frames). Each goes to the chat, Responses,
 * Messages and Gemini routes in turn, so that every translation and every dialect's encoder
 * meets it. The gateway answers as it can read, or with the provider's fault, 502 (in a
 * stream, an error event) `invalid_upstream_response`; never its own 500, never an
 * internal-error event, never a hang. Sized for CI, each place gets the removal and half the
 * other wrong values (support/spoil.ts); UPSTREAM_SWEEP=full gives every place every value
 * and sends each answer to all four routes.
 */

/** One full non-streamed answer per provider family. */
const ANSWERS: Record<string, unknown> = {
  openai: {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4o-mini',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: 'hi', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
        finish_reason: 'tool_calls',
        logprobs: null,
      },
    ],
    usage: {
      prompt_tokens: 3,
      completion_tokens: 2,
      total_tokens: 5,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
    },
  },
  anthropic: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-3-5-haiku-latest',
    content: [
      { type: 'thinking', thinking: 'hm', signature: 'sig' },
      { type: 'text', text: 'hi' },
      { type: 'tool_use', id: 'toolu_1', name: 'f', input: { a: 1 } },
    ],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: 3, output_tokens: 2, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
  },
  google: {
    candidates: [
      {
        content: { role: 'model', parts: [{ text: 'hm', thought: true }, { text: 'hi' }, { functionCall: { name: 'f', args: { a: 1 } } }] },
        finishReason: 'STOP',
        index: 0,
        safetyRatings: [{ category: 'HARM_CATEGORY_HARASSMENT', probability: 'NEGLIGIBLE' }],
      },
    ],
    usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 5, thoughtsTokenCount: 1 },
    modelVersion: 'gemini-2.0-flash',
    responseId: 'r1',
  },
  bedrock: {
    output: {
      message: {
        role: 'assistant',
        content: [
          { reasoningContent: { reasoningText: { text: 'hm', signature: 'sig' } } },
          { text: 'hi' },
          { toolUse: { toolUseId: 't1', name: 'f', input: { a: 1 } } },
        ],
      },
    },
    stopReason: 'tool_use',
    usage: { inputTokens: 3, outputTokens: 2, totalTokens: 5 },
    metrics: { latencyMs: 1 },
  },
  cohere: {
    id: 'c1',
    finish_reason: 'TOOL_CALL',
    message: {
      role: 'assistant',
      content: [{ type: 'text', text: 'hi' }],
      tool_plan: 'plan',
      tool_calls: [{ id: 'tc1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
    },
    usage: { billed_units: { input_tokens: 3, output_tokens: 2 }, tokens: { input_tokens: 3, output_tokens: 2 } },
  },
};
/** One full stream per provider family: events in order (OpenAI's end with `[DONE]`). */
type Ev = { event?: string; data: Record<string, unknown> };
const base = { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini' };
const STREAMS: Record<string, Ev[]> = {
  openai: [
    { data: { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] } },
    { data: { ...base, choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: null }] } },
    {
      data: { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } }] } }] },
    },
    { data: { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"a":1}' } }] } }] } },
    { data: { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] } },
    { data: { ...base, choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } } },
  ],
  anthropic: [
    {
      event: 'message_start',
      data: {
        type: 'message_start',
        message: {
          id: 'm1',
          type: 'message',
          role: 'assistant',
          model: 'claude',
          content: [],
          stop_reason: null,
          usage: { input_tokens: 3, output_tokens: 0 },
        },
      },
    },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'hm' } } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig' } } },
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'hi' } } },
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 1 } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 't1', name: 'f', input: {} } } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"a":1}' } } },
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 2 } },
    { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 2 } } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ],
  google: [
    {
      data: {
        candidates: [{ content: { role: 'model', parts: [{ text: 'hm', thought: true }, { text: 'hi' }] }, index: 0 }],
        modelVersion: 'gemini-2.0-flash',
      },
    },
    {
      data: {
        candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'f', args: { a: 1 } } }] }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 5 },
      },
    },
  ],
  cohere: [
    { event: 'message-start', data: { type: 'message-start', id: 'c1', delta: { message: { role: 'assistant' } } } },
    { event: 'content-start', data: { type: 'content-start', index: 0, delta: { message: { content: { type: 'text', text: '' } } } } },
    { event: 'content-delta', data: { type: 'content-delta', index: 0, delta: { message: { content: { text: 'hi' } } } } },
    { event: 'content-end', data: { type: 'content-end', index: 0 } },
    { event: 'tool-plan-delta', data: { type: 'tool-plan-delta', delta: { message: { tool_plan: 'plan' } } } },
    {
      event: 'tool-call-start',
      data: { type: 'tool-call-start', index: 0, delta: { message: { tool_calls: { id: 'tc1', type: 'function', function: { name: 'f', arguments: '' } } } } },
    },
    { event: 'tool-call-delta', data: { type: 'tool-call-delta', index: 0, delta: { message: { tool_calls: { function: { arguments: '{"a":1}' } } } } } },
    { event: 'tool-call-end', data: { type: 'tool-call-end', index: 0 } },
    {
      event: 'message-end',
      data: {
        type: 'message-end',
        delta: { finish_reason: 'TOOL_CALL', usage: { billed_units: { input_tokens: 3, output_tokens: 2 }, tokens: { input_tokens: 3, output_tokens: 2 } } },
      },
    },
  ],
  bedrock: [
    { event: 'messageStart', data: { role: 'assistant' } },
    { event: 'contentBlockDelta', data: { contentBlockIndex: 0, delta: { reasoningContent: { text: 'hm' } } } },
    { event: 'contentBlockDelta', data: { contentBlockIndex: 0, delta: { reasoningContent: { signature: 'sig' } } } },
    { event: 'contentBlockStop', data: { contentBlockIndex: 0 } },
    { event: 'contentBlockDelta', data: { contentBlockIndex: 1, delta: { text: 'hi' } } },
    { event: 'contentBlockStop', data: { contentBlockIndex: 1 } },
    { event: 'contentBlockStart', data: { contentBlockIndex: 2, start: { toolUse: { toolUseId: 't1', name: 'f' } } } },
    { event: 'contentBlockDelta', data: { contentBlockIndex: 2, delta: { toolUse: { input: '{"a":1}' } } } },
    { event: 'contentBlockStop', data: { contentBlockIndex: 2 } },
    { event: 'messageStop', data: { stopReason: 'tool_use' } },
    { event: 'metadata', data: { usage: { inputTokens: 3, outputTokens: 2, totalTokens: 5 }, metrics: { latencyMs: 1 } } },
  ],
};
const AWS = { 'x-gateway-aws-access-key-id': 'AKIDEXAMPLE', 'x-gateway-aws-secret-access-key': 'secret', 'x-gateway-aws-region': 'us-east-1' };
const PROVIDERS: Record<string, (url: string) => Record<string, string>> = {
  openai: (u) => ({ 'x-gateway-provider': 'openai', authorization: 'Bearer sk', 'x-gateway-custom-host': `${u}/v1` }),
  anthropic: (u) => ({ 'x-gateway-provider': 'anthropic', authorization: 'Bearer sk', 'x-gateway-custom-host': `${u}/v1` }),
  google: (u) => ({ 'x-gateway-provider': 'google', authorization: 'Bearer g', 'x-gateway-custom-host': `${u}/v1beta` }),
  bedrock: (u) => ({ 'x-gateway-provider': 'bedrock', ...AWS, 'x-gateway-custom-host': u }),
  cohere: (u) => ({ 'x-gateway-provider': 'cohere', authorization: 'Bearer c', 'x-gateway-custom-host': u }),
};

const TOOLS = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'number' } } } } }];
const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], tools: TOOLS };
const RESPONSES = { model: 'gpt-4o-mini', input: 'hi', tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }] };
const MESSAGES = {
  model: 'claude-3-5-haiku-latest',
  max_tokens: 20,
  messages: [{ role: 'user', content: 'hi' }],
  tools: [{ name: 'f', input_schema: { type: 'object' } }],
};
const GEMINI = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };
const ROUTES: Record<'whole' | 'stream', Array<{ path: string; body: unknown }>> = {
  whole: [
    { path: '/v1/chat/completions', body: CHAT },
    { path: '/v1/responses', body: RESPONSES },
    { path: '/v1/messages', body: MESSAGES },
    { path: '/v1beta/models/gemini-2.0-flash:generateContent', body: GEMINI },
  ],
  stream: [
    { path: '/v1/chat/completions', body: { ...CHAT, stream: true, stream_options: { include_usage: true } } },
    { path: '/v1/responses', body: { ...RESPONSES, stream: true } },
    { path: '/v1/messages', body: { ...MESSAGES, stream: true } },
    { path: '/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse', body: GEMINI },
  ],
};

/** What the provider stand-in answers: picked per request by the `x-answer` header the gateway forwards. */
type Answer = { provider: string; json: unknown } | { provider: string; events: Ev[] };
const answers: Answer[] = [];
let gw: LocalGateway;
let upstream: Server;
let upstreamUrl: string;

beforeAll(async () => {
  gw = await startTestGateway();
  upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const answer = answers[Number(req.headers['x-answer'])]!;
      if ('json' in answer) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify(answer.json));
      }
      if (answer.provider === 'bedrock') {
        res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream' });
        answer.events.forEach((e, n) => res.write(eventFrame(e.event!, e.data, n)));
        return res.end();
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const e of answer.events) res.write(`${e.event ? `event: ${e.event}\n` : ''}data: ${JSON.stringify(e.data)}\n\n`);
      if (answer.provider === 'openai') res.write('data: [DONE]\n\n');
      res.end();
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as { port: number }).port}`;
});
afterAll(async () => {
  await gw?.stop();
  await new Promise((r) => upstream?.close(r));
});

interface Probe {
  path: string;
  body: unknown;
  provider: string;
  answer: number;
  what: string;
}

/** UPSTREAM_SWEEP=full: every wrong value at every place, each answer to all four routes. */
const full = process.env.UPSTREAM_SWEEP === 'full';
const wrongs = (n: number) => (full ? WRONG : wrongAt(n));

/** Each spoiled answer to one route, the next in turn (every route meets every provider). */
function probesFor(kind: 'whole' | 'stream', provider: string, variants: Array<{ answer: Answer; what: string }>): Probe[] {
  const routes = ROUTES[kind];
  return variants.flatMap(({ answer, what }, i) => {
    answers.push(answer);
    const index = answers.length - 1;
    const to = full || what === 'as sent' ? routes : [routes[i % routes.length]!];
    return to.map(({ path, body }) => ({ path, body, provider, answer: index, what }));
  });
}

/** What is wrong with the gateway's answer to one probe, if anything. */
async function problemOf(p: Probe): Promise<string | undefined> {
  const where = `${p.path} via ${p.provider}, ${p.what}`;
  try {
    const res = await fetch(gw.url + p.path, {
      method: 'POST',
      signal: AbortSignal.timeout(15_000),
      headers: {
        'x-gateway-api-key': gw.adminKey,
        'content-type': 'application/json',
        ...PROVIDERS[p.provider]!(upstreamUrl),
        'x-answer': String(p.answer),
        'x-gateway-forward-headers': 'x-answer',
      },
      body: JSON.stringify(p.body),
    });
    const text = await res.text();
    const fault = /invalid_upstream_response|of a shape the gateway cannot read/.test(text);
    if (p.what === 'as sent')
      return res.status !== 200 || fault || /"error":\{/.test(text) ? `the full answer: ${res.status} ${where} -> ${text.slice(-300)}` : undefined;
    if (res.status >= 500 && !(res.status === 502 && fault)) return `${res.status} ${where} -> ${text.slice(0, 300)}`;
    if (/internal_error|server_error|internal error/.test(text)) return `an internal error event: ${where} -> ${text.slice(-300)}`;
    return undefined;
  } catch (err) {
    return `${(err as Error).message}: ${where}`;
  }
}

const failuresOf = (probes: Probe[]) => sweep(probes, problemOf);

describe('provider answers of an unexpected shape', () => {
  it('a whole answer spoiled at any place: read, or 502 invalid_upstream_response; never a 500', { timeout: 300_000 }, async () => {
    const probes = Object.entries(ANSWERS).flatMap(([provider, json]) =>
      probesFor('whole', provider, [
        { answer: { provider, json }, what: 'as sent' },
        ...pathsOf(json).flatMap((at, n) => wrongs(n).map((wrong) => ({ answer: { provider, json: spoil(json, at, wrong) }, what: spoiled(at, wrong) }))),
      ]),
    );
    const failures = await failuresOf(probes);
    expect(failures, `${failures.length} of ${probes.length} answers`).toEqual([]);
  });

  it('one stream event spoiled at any place: the stream ends cleanly or with the provider’s error event; never an internal one', {
    timeout: 300_000,
  }, async () => {
    const probes = Object.entries(STREAMS).flatMap(([provider, events]) =>
      probesFor('stream', provider, [
        { answer: { provider, events }, what: 'as sent' },
        ...events.flatMap((event, e) =>
          pathsOf(event.data).flatMap((at, n) =>
            wrongs(n).map((wrong) => ({
              answer: { provider, events: events.map((x, k) => (k === e ? { ...x, data: spoil(x.data, at, wrong) } : x)) },
              what: `event ${e}: ${spoiled(at, wrong)}`,
            })),
          ),
        ),
      ]),
    );
    const failures = await failuresOf(probes);
    expect(failures, `${failures.length} of ${probes.length} answers`).toEqual([]);
  });
});
