import { RE2JS } from 're2js';

/**
 * Regular expressions written by callers and workspace admins (conditional routing's
 * `$regex`, the `regexMatch` guardrail) run on RE2 semantics (re2js): matching takes time
 * linear in the text whatever the pattern, so a pattern such as `^(a+)+$` cannot hold a
 * container's event loop for seconds, as it does on V8's backtracking engine. RE2 has no
 * backreferences and no lookaround; such patterns are refused when compiled.
 *
 * A pattern is bare (`\d{4}`) or a JavaScript literal (`/hello/i`). Flags: `i`, `m`, `s`;
 * `u` is RE2's default; `g`, `y` and `d` mean nothing for a yes/no match and are ignored.
 */
export interface LinearRegex {
  /** Whether the pattern matches anywhere in `text`. */
  test(text: string): boolean;
}

const FLAG_BITS: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL, u: 0, g: 0, y: 0, d: 0 };
const CACHE_LIMIT = 500;
const compiled = new Map<string, LinearRegex>();

/** Compile a pattern (cached); throws an Error naming what RE2 cannot express. */
export function compileLinearRegex(pattern: string): LinearRegex {
  const hit = compiled.get(pattern);
  if (hit) return hit;
  const literal = /^\/(.+)\/([a-z]*)$/s.exec(pattern);
  const source = literal ? literal[1]! : pattern;
  let flags = 0;
  for (const flag of literal?.[2] ?? '') {
    const bit = FLAG_BITS[flag];
    if (bit === undefined) throw new Error(`unsupported regular expression flag '${flag}'`);
    flags |= bit;
  }
  const re = RE2JS.compile(source, flags);
  const regex: LinearRegex = { test: (text) => re.matcher(text).find() };
  if (compiled.size >= CACHE_LIMIT) compiled.delete(compiled.keys().next().value as string);
  compiled.set(pattern, regex);
  return regex;
}

/** The reason a pattern is refused, or undefined when it compiles. */
export function linearRegexProblem(pattern: string): string | undefined {
  try {
    compileLinearRegex(pattern);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}
