import { expect } from 'vitest';
import type { ChatCompletionChunk, StreamError, StreamTranslator, TranslateContext, Usage } from '../../../functions/providers/types';

export const ctx = (over: Partial<TranslateContext> = {}): TranslateContext => ({
  model: 'caller-model',
  id: 'chatcmpl-gw1',
  created: 1700000000,
  includeUsage: false,
  ...over,
});

export interface Run {
  chunks: ChatCompletionChunk[];
  error?: StreamError;
  usage?: Usage;
}

export function run(t: StreamTranslator, parts: Uint8Array[]): Run {
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

/** The wire text as bytes cut every `size` bytes (so lines and UTF-8 characters split). */
export function cut(text: string, size: number): Uint8Array[] {
  const bytes = Buffer.from(text, 'utf8');
  const parts: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) parts.push(bytes.subarray(i, i + size));
  return parts;
}

/** Cut at given byte offsets. */
export function cutAt(text: string, offsets: number[]): Uint8Array[] {
  const bytes = Buffer.from(text, 'utf8');
  const points = [0, ...offsets, bytes.length];
  return points.slice(1).map((end, i) => bytes.subarray(points[i], end));
}

/** Byte offset just inside the first multi-byte character of `needle` (mid-character). */
export function midChar(text: string, needle: string): number {
  const at = text.indexOf(needle);
  if (at < 0) throw new Error(`needle ${needle} not in text`);
  return Buffer.byteLength(text.slice(0, at), 'utf8') + 1;
}

/**
 * Runs the stream whole, byte by byte, in odd-sized pieces and cut mid-character, and
 * checks every way gives the same result; returns it.
 */
export function translateEveryWay(make: () => StreamTranslator, text: string, needle?: string): Run {
  const whole = run(make(), [Buffer.from(text, 'utf8')]);
  for (const size of [1, 2, 3, 7, 13, 64]) expect(run(make(), cut(text, size))).toEqual(whole);
  if (needle) expect(run(make(), cutAt(text, [midChar(text, needle), midChar(text, needle) + 1]))).toEqual(whole);
  return whole;
}

export const contentOf = (chunks: ChatCompletionChunk[]) => chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
