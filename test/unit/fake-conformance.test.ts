/**
 * The fakes against the published wire fixtures (test/fixtures/<provider>/): for each
 * provider, the fake's answer to an equivalent request must have the fixture's structure.
 * Values differ (the fakes echo), so this compares shapes: the key paths of JSON bodies,
 * the kinds of stream events in order (runs of the same kind collapsed: the number of
 * deltas is the model's business), the key paths of each kind of event, and the bytes
 * that separate SSE events. `OPTIONAL` lists the paths a real provider sends only
 * sometimes, so either side may lack them; `label:path` limits one to a case (`tool`,
 * `text`, `error`) or to one kind of stream event.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAllFakes, type AllFakes } from '../fakes';
import { decodeBedrockStream, hasFixture, keyPaths, parseSse, readJson, streamBytes, type BedrockEvent, type FixtureProvider } from '../support/wire-fixtures';

let fakes: AllFakes;
beforeAll(async () => {
  fakes = await startAllFakes({}, { acceptBearer: true });
});
afterAll(async () => {
  await fakes?.close();
});

type Kind = 'text' | 'tool';
interface Call {
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

const QUESTION: Record<Kind, string> = { text: 'Hello there', tool: 'What is the weather in Paris?' };
const TOOL = { name: 'get_weather', description: 'Current weather', schema: { type: 'object', properties: { location: { type: 'string' } } } };

/** An equivalent request per provider: the fixture's kind of answer, streamed or not. */
const REQUESTS: Record<FixtureProvider, (kind: Kind, stream: boolean) => Call> = {
  anthropic: (kind, stream) => ({
    path: '/v1/messages',
    headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
    body: {
      model: 'claude-opus-4-8',
      max_tokens: 256,
      messages: [{ role: 'user', content: QUESTION[kind] }],
      ...(kind === 'tool' ? { tools: [{ name: TOOL.name, description: TOOL.description, input_schema: TOOL.schema }] } : {}),
      ...(stream ? { stream: true } : {}),
    },
  }),
  google: (kind, stream) => ({
    path: `/v1beta/models/gemini-2.0-flash:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
    headers: { 'x-goog-api-key': 'k' },
    body: {
      contents: [{ role: 'user', parts: [{ text: QUESTION[kind] }] }],
      ...(kind === 'tool' ? { tools: [{ functionDeclarations: [{ name: TOOL.name, description: TOOL.description, parameters: TOOL.schema }] }] } : {}),
    },
  }),
  bedrock: (kind, stream) => ({
    path: `/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/${stream ? 'converse-stream' : 'converse'}`,
    headers: { authorization: 'Bearer k' },
    body: {
      messages: [{ role: 'user', content: [{ text: QUESTION[kind] }] }],
      ...(kind === 'tool'
        ? { toolConfig: { tools: [{ toolSpec: { name: TOOL.name, description: TOOL.description, inputSchema: { json: TOOL.schema } } }] } }
        : {}),
    },
  }),
  cohere: (kind, stream) => ({
    path: '/v2/chat',
    headers: { authorization: 'Bearer k' },
    body: {
      model: 'command-a-03-2025',
      messages: [{ role: 'user', content: QUESTION[kind] }],
      ...(kind === 'tool' ? { tools: [{ type: 'function', function: { name: TOOL.name, description: TOOL.description, parameters: TOOL.schema } }] } : {}),
      stream,
    },
  }),
  openai: (kind, stream) => ({
    path: '/v1/chat/completions',
    headers: { authorization: 'Bearer k' },
    body: {
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: QUESTION[kind] }],
      ...(kind === 'tool' ? { tools: [{ type: 'function', function: { name: TOOL.name, description: TOOL.description, parameters: TOOL.schema } }] } : {}),
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    },
  }),
};

/**
 * Paths whose children are the model's own data (tool arguments), and paths real
 * providers send only in some answers. A key below a free-form path is never compared.
 */
const FREE_FORM = [
  'content[].input', // Anthropic tool_use input
  'content_block.input',
  'candidates[].content.parts[].functionCall.args', // Gemini
  'output.message.content[].toolUse.input', // Bedrock Converse
];
const OPTIONAL: Record<FixtureProvider, string[]> = {
  anthropic: [
    // Present when prompt caching or a service tier applies.
    'usage.cache_creation_input_tokens',
    'usage.cache_read_input_tokens',
    'usage.service_tier',
    'message.usage.cache_creation_input_tokens',
    'message.usage.cache_read_input_tokens',
    'message.usage.service_tier',
  ],
  google: [
    // Per model and request: log-probabilities, per-modality token details.
    'candidates[].avgLogprobs',
    'usageMetadata.candidatesTokensDetails',
    'usageMetadata.candidatesTokensDetails[].modality',
    'usageMetadata.candidatesTokensDetails[].tokenCount',
    // Errors carry google.rpc details whose members depend on the error.
    'error:error.details',
    'error:error.details[].@type',
    'error:error.details[].detail',
  ],
  bedrock: [
    // Random padding against length side channels; documented as "usually" present.
    'p',
    // Claude on Bedrock often says a sentence before calling a tool; the AWS example does not.
    'tool:output.message.content[].text',
  ],
  cohere: [
    // Reasoning models (Command A Reasoning) answer tool calls with thinking content,
    // the others with a tool_plan.
    'tool:message.tool_plan',
    'tool:message.content',
    'tool:message.content[].type',
    'tool:message.content[].thinking',
    // message-start may list the empty message members or only the role.
    'message-start:delta.message.content',
    'message-start:delta.message.tool_plan',
    'message-start:delta.message.tool_calls',
    'message-start:delta.message.citations',
  ],
  openai: [
    // Newer API versions add these; the recorded fixtures predate some of them.
    'choices[].message.annotations',
    'choices[].message.refusal',
    'choices[].delta.refusal',
    'service_tier',
    'system_fingerprint',
    'usage.prompt_tokens_details',
    'usage.prompt_tokens_details.cached_tokens',
    'usage.prompt_tokens_details.audio_tokens',
    'usage.completion_tokens_details',
    'usage.completion_tokens_details.reasoning_tokens',
    'usage.completion_tokens_details.audio_tokens',
    'usage.completion_tokens_details.accepted_prediction_tokens',
    'usage.completion_tokens_details.rejected_prediction_tokens',
    'usage',
  ],
};

function shape(provider: FixtureProvider, value: unknown, label = ''): string[] {
  const optional = OPTIONAL[provider];
  const skip = (p: string) => optional.includes(p) || optional.includes(`${label}:${p}`) || FREE_FORM.some((f) => p.startsWith(`${f}.`));
  return [...keyPaths(value)].filter((p) => !skip(p)).sort();
}

async function call(provider: FixtureProvider, c: Call, extraHeaders: Record<string, string> = {}): Promise<Response> {
  const fake = provider === 'google' ? fakes.gemini : fakes[provider];
  return fetch(fake.url + c.path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...c.headers, ...extraHeaders },
    body: JSON.stringify(c.body),
  });
}

interface StreamEvent {
  kind: string;
  data: unknown;
}

/** Events of a stream, each with a kind: its SSE event name, Bedrock event type, or a role. */
function events(provider: FixtureProvider, bytes: Buffer): StreamEvent[] {
  if (provider === 'bedrock') {
    return decodeBedrockStream(bytes).map((e: BedrockEvent) => ({ kind: e.event ?? `exception:${e.exception}`, data: e.payload }));
  }
  return parseSse(bytes.toString('utf8')).map((e) => ({ kind: e.event ?? dataKind(provider, e.data), data: e.data }));
}

/** Streams without `event:` lines: the role the event plays. */
function dataKind(provider: FixtureProvider, data: unknown): string {
  if (data === '[DONE]') return '[DONE]';
  const d = data as { choices?: Array<{ finish_reason?: string | null }>; candidates?: Array<{ finishReason?: string }> };
  if (provider === 'openai') return d.choices?.length === 0 ? 'usage' : d.choices?.[0]?.finish_reason ? 'finish' : 'delta';
  return d.candidates?.[0]?.finishReason ? 'last' : 'partial';
}

/**
 * Kinds in order with repetition folded: runs of one kind (many deltas) and runs of one
 * group (a second tool call's start, deltas, end) count once.
 */
function collapse(kinds: string[]): string[] {
  let out = kinds.filter((k, i) => k !== kinds[i - 1]);
  for (let size = 2; size <= out.length / 2; size++) {
    for (let at = 0; at + 2 * size <= out.length; ) {
      const same = out.slice(at, at + size).every((k, i) => k === out[at + size + i]);
      if (same) out = [...out.slice(0, at + size), ...out.slice(at + 2 * size)];
      else at++;
    }
  }
  return out;
}

/** Key paths of every kind of event, the union over the events of that kind. */
function shapesByKind(provider: FixtureProvider, evs: StreamEvent[]): Record<string, string[]> {
  const out: Record<string, Set<string>> = {};
  for (const e of evs) for (const p of shape(provider, e.data, e.kind)) (out[e.kind] ??= new Set()).add(p);
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, [...v].sort()]));
}

/** The bytes between SSE events (`\n\n`, `\r\n\r\n`), in order of first use. */
function separators(bytes: Buffer): string[] {
  return [...new Set(bytes.toString('utf8').match(/(\r\n\r\n|\n\n)(?=data:|event:|$)/g) ?? [])].map((s) => JSON.stringify(s));
}

const PROVIDERS: FixtureProvider[] = ['anthropic', 'google', 'bedrock', 'cohere', 'openai'];

describe.each(PROVIDERS)('%s fake against the fixtures', (provider) => {
  it.each(['text', 'tool'] as Kind[])('%s answer has the fixture body keys', async (kind) => {
    const res = await call(provider, REQUESTS[provider](kind, false));
    expect(res.status).toBe(200);
    expect(shape(provider, await res.json(), kind)).toEqual(shape(provider, readJson(provider, `${kind}.json`), kind));
  });

  it.each(['text', 'tool'] as Kind[])('%s stream has the fixture events, in order, with their keys', async (kind) => {
    const res = await call(provider, REQUESTS[provider](kind, true));
    expect(res.status).toBe(200);
    const fake = Buffer.from(await res.arrayBuffer());
    const real = streamBytes(provider, `${kind}-stream`)!;
    const fakeEvents = events(provider, fake);
    const realEvents = events(provider, real);
    expect(collapse(fakeEvents.map((e) => e.kind))).toEqual(collapse(realEvents.map((e) => e.kind)));
    expect(shapesByKind(provider, fakeEvents)).toEqual(shapesByKind(provider, realEvents));
    if (provider !== 'bedrock') expect(separators(fake)).toEqual(separators(real));
  });

  it('error reply has the fixture body keys and error headers', async () => {
    const fixture = readJson<{ status: number; headers?: Record<string, string>; body: unknown }>(provider, 'error.json');
    const res = await call(provider, REQUESTS[provider]('text', false), { 'x-fake-status': String(fixture.status) });
    expect(res.status).toBe(fixture.status);
    expect(shape(provider, await res.json(), 'error')).toEqual(shape(provider, fixture.body, 'error'));
    for (const name of Object.keys(fixture.headers ?? {})) expect(res.headers.get(name), name).toBeTruthy();
  });
});

const STREAM_ERROR_PROVIDERS = PROVIDERS.filter((p) => hasFixture(p, 'stream-error.sse') || hasFixture(p, 'stream-error.events.json'));

describe.each(STREAM_ERROR_PROVIDERS)('%s fake failing inside a stream', (provider) => {
  it('sends the fixture kind of error event, with its keys', async () => {
    const res = await call(provider, REQUESTS[provider]('text', true), { 'x-fake-stream-error': '1', 'x-fake-cut-after': '2' });
    const fakeEvents = events(provider, Buffer.from(await res.arrayBuffer()));
    const realEvents = events(provider, streamBytes(provider, 'stream-error')!);
    const lastOf = (evs: StreamEvent[]) => evs[evs.length - 1]!;
    expect(lastOf(fakeEvents).kind.startsWith('exception:')).toBe(lastOf(realEvents).kind.startsWith('exception:'));
    if (provider !== 'bedrock') expect(lastOf(fakeEvents).kind).toBe(lastOf(realEvents).kind);
    expect(shape(provider, lastOf(fakeEvents).data)).toEqual(shape(provider, lastOf(realEvents).data));
  });
});
