/**
 * Replays the published provider wire fixtures (test/fixtures/<provider>/) through the
 * translators, reached only through the registry: response bodies through
 * `chat.response`, stream bytes through `chat.stream` cut several ways (whole, a few
 * bytes at a time, seeded random splits). Every cut must give the same chunks, and
 * those must match `<case>.expected.json`.
 *
 * `UPDATE_FIXTURES=1` rewrites the expected files from the translators' output (then
 * read the diff: an expected file is a claim about the provider, not a snapshot).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { getAdapter } from '../../functions/providers/registry';
import type { ChatCompletionChunk, ProviderAdapter, StreamError, TranslateContext, Usage } from '../../functions/providers/types';
import { PROVIDER_SLUGS } from '../../functions/shared/provider-table';
import {
  chunkFacts,
  completionFacts,
  FIXTURE_PROVIDERS,
  FIXTURES_DIR,
  hasFixture,
  parseSse,
  randomSplits,
  readJson,
  responseCases,
  streamCases,
  streamBytes,
  type FixtureProvider,
} from '../support/wire-fixtures';

const UPDATE = process.env.UPDATE_FIXTURES === '1';
const ADAPTERS: Record<string, ProviderAdapter | undefined> = Object.fromEntries(await Promise.all(PROVIDER_SLUGS.map(async (s) => [s, await getAdapter(s)])));

const ctx: TranslateContext = { model: 'caller-model', id: 'chatcmpl-fixture', created: 1700000000, includeUsage: true };

function expectFixture(provider: string, name: string, actual: unknown) {
  const file = `${name}.expected.json`;
  if (UPDATE) writeFileSync(join(FIXTURES_DIR, provider, file), `${JSON.stringify(actual, null, 2)}\n`);
  expect(hasFixture(provider, file), `${provider}/${file} is missing`).toBe(true);
  expect(actual).toEqual(readJson(provider, file));
}

interface Replay {
  chunks: ChatCompletionChunk[];
  error?: StreamError;
  usage?: Usage;
}

function replay(slug: string, parts: Uint8Array[]): Replay {
  const stream = ADAPTERS[slug]!.chat!.stream;
  if (!stream) return passThrough(parts);
  const t = stream(ctx);
  const chunks: ChatCompletionChunk[] = [];
  let error: StreamError | undefined;
  for (const part of parts) {
    const out = t.push(part);
    chunks.push(...out.chunks);
    error ??= out.error;
  }
  const last = t.end();
  chunks.push(...last.chunks);
  error ??= last.error;
  return { chunks, error, usage: t.usage() };
}

/** Providers without a stream translator (OpenAI) reach the caller byte for byte. */
function passThrough(parts: Uint8Array[]): Replay {
  const text = Buffer.concat(parts).toString('utf8');
  const chunks = parseSse(text)
    .map((e) => e.data)
    .filter((d): d is ChatCompletionChunk => typeof d === 'object' && d !== null);
  const usage = chunks.find((c) => c.usage)?.usage ?? undefined;
  return { chunks, usage };
}

function cuts(bytes: Buffer): Array<[string, Uint8Array[]]> {
  const every = (size: number) => {
    const parts: Uint8Array[] = [];
    for (let i = 0; i < bytes.length; i += size) parts.push(bytes.subarray(i, i + size));
    return parts;
  };
  return [
    ['whole', [bytes]],
    ['1 byte', every(1)],
    ['3 bytes', every(3)],
    ['17 bytes', every(17)],
    ...[1, 2, 3].map((seed): [string, Uint8Array[]] => [`seed ${seed}`, randomSplits(bytes, seed, 12)]),
  ];
}

describe.each(Object.entries(FIXTURE_PROVIDERS) as Array<[FixtureProvider, string]>)('%s fixtures through the translator', (provider, slug) => {
  const chat = ADAPTERS[slug]?.chat;

  it('has an adapter with a chat translator', () => {
    expect(chat).toBeDefined();
  });

  it.each(responseCases(provider))('%s response', (name) => {
    const wire = readJson(provider, `${name}.json`);
    const completion = chat!.response(wire, ctx);
    expect(completion.object).toBe('chat.completion');
    expectFixture(provider, name, completionFacts(completion, JSON.stringify(wire)));
  });

  it.each(streamCases(provider))('%s, every way of cutting the bytes', (name) => {
    const bytes = streamBytes(provider, name)!;
    // Ids are ASCII: looking them up in a latin1 reading works for SSE and binary frames.
    const wire = bytes.toString('latin1');
    // Made-up tool call ids differ per run; everything else must not depend on the cuts.
    const facts = (r: Replay) => ({ chunks: chunkFacts(r.chunks, wire), usage: r.usage ?? null, error: r.error ?? null });
    const ways = cuts(bytes);
    const reference = replay(slug, ways[0]![1]);
    for (const [how, parts] of ways.slice(1)) expect(facts(replay(slug, parts)), how).toEqual(facts(reference));
    for (const c of reference.chunks) expect(c.object).toBe('chat.completion.chunk');
    expectFixture(provider, name, facts(reference));
  });
});
