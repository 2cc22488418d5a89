/**
 * How deep arrays and objects may nest in JSON a caller sends (bodies, inline configs).
 * Far beyond what real requests use (a JSON Schema in `response_format` or a tool's
 * parameters rarely passes 20), and low enough that nothing recursive (JSON.stringify,
 * validation, translation) can run out of stack on it.
 */
export const MAX_JSON_DEPTH = 128;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/** The index of the quote that closes the string opened at `open`, or -1. */
function stringEnd(text: string, open: number): number {
  let at = open;
  for (;;) {
    at = text.indexOf('"', at + 1);
    if (at < 0) return -1;
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}

/**
 * Whether JSON text nests arrays and objects deeper than `max`, read off the text before
 * it is parsed: strings are skipped with `indexOf`, so a 3 KB chat body costs about 4 µs
 * (its JSON.parse about 25 µs). Malformed text is left for JSON.parse to refuse.
 */
export function nestsDeeperThan(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = stringEnd(text, i);
      if (i < 0) return false;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return false;
}
