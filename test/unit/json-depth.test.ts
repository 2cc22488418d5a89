import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../functions/shared/json-depth';

const nested = (depth: number, open = '[', close = ']') => open.repeat(depth) + close.repeat(depth);

describe('nestsDeeperThan', () => {
  it('counts arrays and objects alike, up to the limit inclusive', () => {
    expect(nestsDeeperThan(nested(MAX_JSON_DEPTH))).toBe(false);
    expect(nestsDeeperThan(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(nestsDeeperThan(`${'{"a":['.repeat(64)}1${']}'.repeat(64)}`)).toBe(false);
    expect(nestsDeeperThan(`${'{"a":['.repeat(65)}1${']}'.repeat(65)}`)).toBe(true);
  });

  it('measures depth, not the number of brackets', () => {
    expect(nestsDeeperThan(`[${Array.from({ length: 10_000 }, () => '[1,{"a":2}]').join(',')}]`)).toBe(false);
  });

  it('skips brackets inside strings, escaped quotes and escaped backslashes included', () => {
    expect(nestsDeeperThan(JSON.stringify({ s: nested(500) }))).toBe(false);
    expect(nestsDeeperThan(JSON.stringify({ s: `\\"${'['.repeat(500)}` }))).toBe(false);
    expect(nestsDeeperThan(JSON.stringify({ s: 'ends in a backslash\\', t: '['.repeat(500) }))).toBe(false);
    // A string closed after an escaped backslash: the brackets after it are structure.
    expect(nestsDeeperThan(`["a\\\\",${nested(200)}]`)).toBe(true);
  });

  it('leaves malformed text to JSON.parse', () => {
    expect(nestsDeeperThan('"never closed [[[[')).toBe(false);
    expect(nestsDeeperThan(']]]]')).toBe(false);
  });
});
