/**
 * Provider wire fixtures (test/fixtures/<provider>/): published provider responses, read
 * back as the bytes a provider would send. Shared by the translator replay test and the
 * fake-conformance test. File names per provider:
 *   text.json, tool.json                  non-streamed answers (200 bodies); more cases
 *                                          (`blocked.json`, …) are replayed the same way
 *   text-stream.sse, tool-stream.sse      streamed answers, raw SSE text (likewise)
 *   *.events.json                         Bedrock streams: [{event|exception, payload}],
 *                                          encoded into binary event-stream frames here
 *   stream-error.*                        a stream that fails inside its 200 response
 *   error.json                            {status, headers?, body} of an error reply
 *   <case>.expected.json                  what the translator must make of <case>
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EventStreamCodec, type MessageHeaders } from '@smithy/eventstream-codec';
import type { ChatCompletion, ChatCompletionChunk } from '../../functions/providers/types';

export const FIXTURES_DIR = join(import.meta.dirname, '..', 'fixtures');

/** Fixture folder -> registry slug of the adapter that translates it. */
export const FIXTURE_PROVIDERS = { anthropic: 'anthropic', google: 'google', bedrock: 'bedrock', cohere: 'cohere', openai: 'openai' } as const;
export type FixtureProvider = keyof typeof FIXTURE_PROVIDERS;

/** Non-streamed answer cases: `<case>.json` other than error and expected files. */
export function responseCases(provider: string): string[] {
  return readdirSync(join(FIXTURES_DIR, provider))
    .filter((f) => f.endsWith('.json') && !/\.(expected|events)\.json$/.test(f) && f !== 'error.json')
    .map((f) => f.slice(0, -'.json'.length))
    .sort();
}

/** Stream cases: `<case>.sse` and Bedrock `<case>.events.json`. */
export function streamCases(provider: string): string[] {
  return readdirSync(join(FIXTURES_DIR, provider))
    .map((f) => /^(.+)\.(?:sse|events\.json)$/.exec(f)?.[1])
    .filter((c): c is string => c !== undefined)
    .sort();
}

const path = (provider: string, file: string) => join(FIXTURES_DIR, provider, file);

export function hasFixture(provider: string, file: string): boolean {
  return existsSync(path(provider, file));
}

export function readJson<T = unknown>(provider: string, file: string): T {
  return JSON.parse(readFileSync(path(provider, file), 'utf8')) as T;
}

export interface BedrockEvent {
  event?: string;
  exception?: string;
  payload: Record<string, unknown>;
}

const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'),
  (text) => new Uint8Array(Buffer.from(text, 'utf8')),
);

/** One AWS event-stream frame for a fixture event (headers as Bedrock sends them). */
export function encodeBedrockEvent(e: BedrockEvent): Uint8Array {
  const str = (value: string) => ({ type: 'string' as const, value });
  const headers: MessageHeaders = e.exception
    ? { ':exception-type': str(e.exception), ':content-type': str('application/json'), ':message-type': str('exception') }
    : { ':event-type': str(e.event ?? ''), ':content-type': str('application/json'), ':message-type': str('event') };
  return codec.encode({ headers, body: new Uint8Array(Buffer.from(JSON.stringify(e.payload), 'utf8')) });
}

/** The stream case's wire bytes, or undefined when the provider has no such fixture. */
export function streamBytes(provider: string, name: string): Buffer | undefined {
  if (hasFixture(provider, `${name}.sse`)) return readFileSync(path(provider, `${name}.sse`));
  if (hasFixture(provider, `${name}.events.json`)) {
    return Buffer.concat(readJson<BedrockEvent[]>(provider, `${name}.events.json`).map((e) => encodeBedrockEvent(e)));
  }
  return undefined;
}

/** Bedrock frames decoded back to `{event|exception, payload}` (for comparing fakes). */
export function decodeBedrockStream(bytes: Uint8Array): BedrockEvent[] {
  const out: BedrockEvent[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = 0; at + 4 <= bytes.byteLength; ) {
    const total = view.getUint32(at);
    const msg = codec.decode(bytes.subarray(at, at + total));
    const header = (name: string) => String(msg.headers[name]?.value ?? '');
    const payload = JSON.parse(Buffer.from(msg.body).toString('utf8')) as Record<string, unknown>;
    out.push(header(':message-type') === 'exception' ? { exception: header(':exception-type'), payload } : { event: header(':event-type'), payload });
    at += total;
  }
  return out;
}

/** SSE text -> `{event, data}` per event (data parsed as JSON when it is JSON). */
export function parseSse(text: string): Array<{ event?: string; data: unknown }> {
  return text
    .split(/\r\n\r\n|\n\n|\r\r/)
    .filter((block) => block.trim() !== '')
    .map((block) => {
      let event: string | undefined;
      const data: string[] = [];
      for (const line of block.split(/\r\n|\n|\r/)) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      const raw = data.join('\n');
      try {
        return { event, data: JSON.parse(raw) as unknown };
      } catch {
        return { event, data: raw };
      }
    });
}

type ToolCall = { id?: string; type?: string; name?: string; arguments?: string; index?: number };

/**
 * A tool call id the translator made up (the provider sent none, e.g. Gemini) differs on
 * every run: it is shown as `<generated>` once it is known to be absent from the wire.
 */
const idFrom = (wire: string, id: string) => (wire.includes(id) ? id : '<generated>');

/** The parts of a translated completion that do not vary per call (no id, created). */
export function completionFacts(c: ChatCompletion, wire: string) {
  const choice = c.choices[0]!;
  const calls: ToolCall[] | undefined = choice.message.tool_calls?.map((t) => ({
    id: idFrom(wire, t.id),
    type: t.type,
    name: t.function.name,
    arguments: t.function.arguments,
  }));
  return { model: c.model, content: choice.message.content, ...(calls ? { tool_calls: calls } : {}), finish_reason: choice.finish_reason, usage: c.usage };
}

/** Per chunk: role, content, tool calls, finish_reason, usage (absent keys left out). */
export function chunkFacts(chunks: ChatCompletionChunk[], wire: string) {
  return chunks.map((c) => {
    const choice = c.choices[0];
    const facts: Record<string, unknown> = {};
    if (choice?.delta.role) facts.role = choice.delta.role;
    if (choice?.delta.content !== undefined && choice.delta.content !== null) facts.content = choice.delta.content;
    if (choice?.delta.tool_calls) {
      facts.tool_calls = choice.delta.tool_calls.map((t) => {
        const call: ToolCall = { index: t.index };
        if (t.id !== undefined) call.id = idFrom(wire, t.id);
        if (t.type !== undefined) call.type = t.type;
        if (t.function?.name !== undefined) call.name = t.function.name;
        if (t.function?.arguments !== undefined) call.arguments = t.function.arguments;
        return call;
      });
    }
    if (choice?.finish_reason) facts.finish_reason = choice.finish_reason;
    if (c.usage) facts.usage = c.usage;
    return facts;
  });
}

/**
 * Every key path in a JSON value: objects by key, arrays as `[]` (the union over their
 * elements), e.g. `candidates[].content.parts[].text`. Values are ignored.
 */
export function keyPaths(value: unknown, prefix = ''): Set<string> {
  const out = new Set<string>();
  const walk = (v: unknown, at: string) => {
    if (Array.isArray(v)) {
      for (const item of v) walk(item, `${at}[]`);
    } else if (v !== null && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) {
        const p = at ? `${at}.${k}` : k;
        out.add(p);
        walk(child, p);
      }
    }
  };
  walk(value, prefix);
  return out;
}

/** Mulberry32: a small seeded generator, so "random" splits are the same every run. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The bytes cut at `pieces - 1` seeded random offsets. */
export function randomSplits(bytes: Uint8Array, seed: number, pieces: number): Uint8Array[] {
  const next = seeded(seed);
  const cuts = new Set<number>();
  while (cuts.size < Math.min(pieces - 1, bytes.length - 1)) cuts.add(1 + Math.floor(next() * (bytes.length - 1)));
  const points = [0, ...[...cuts].sort((a, b) => a - b), bytes.length];
  return points.slice(1).map((end, i) => bytes.subarray(points[i], end));
}
