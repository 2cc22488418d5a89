import { describe, expect, it } from 'vitest';
import { compileLinearRegex, linearRegexProblem } from '../../functions/shared/linear-regex';

describe('linear-time regular expressions (RE2 semantics)', () => {
  it('bare patterns and /literal/flags', () => {
    expect(compileLinearRegex('\\d{4}').test('code 1234')).toBe(true);
    expect(compileLinearRegex('\\d{4}').test('code 12')).toBe(false);
    expect(compileLinearRegex('/hello/i').test('HELLO there')).toBe(true);
    expect(compileLinearRegex('/^b$/m').test('a\nb\nc')).toBe(true);
    expect(compileLinearRegex('/a.b/s').test('a\nb')).toBe(true);
    expect(compileLinearRegex('/a.b/').test('a\nb')).toBe(false);
    expect(compileLinearRegex('/hello/gy').test('hello')).toBe(true);
    expect(compileLinearRegex('/caf\u00e9/iu').test('CAF\u00c9')).toBe(true);
  });

  it('patterns that backtrack exponentially on V8 answer at once', () => {
    // On V8's engine the first takes minutes (about 15 s already at 28 characters).
    expect(compileLinearRegex('^(a+)+$').test(`${'a'.repeat(100_000)}!`)).toBe(false);
    expect(compileLinearRegex('^(\\w+\\s?)*$').test(`${'word '.repeat(5_000)}x!`)).toBe(false);
    expect(compileLinearRegex('^(a|aa)+$').test('a'.repeat(50_000))).toBe(true);
  });

  it('refuses what RE2 cannot express, and unknown flags, saying why', () => {
    expect(linearRegexProblem('(a)\\1')).toMatch(/escape/);
    expect(linearRegexProblem('foo(?=bar)')).toMatch(/\(\?=/);
    expect(linearRegexProblem('(')).toMatch(/missing/);
    expect(linearRegexProblem('/a/x')).toBe("unsupported regular expression flag 'x'");
    expect(linearRegexProblem('a+')).toBeUndefined();
  });
});
