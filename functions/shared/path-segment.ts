/**
 * Whether a caller's text, put into an upstream URL as a path segment, could climb out of
 * the path it was put under.
 */

/**
 * Percent-decodings undone when judging a segment: API Gateway may or may not have decoded
 * the path once already, and a provider's server may decode again. A segment still
 * encoded after this many is refused.
 */
const DECODE_ROUNDS = 3;

/**
 * A segment that, once decoded, the URL parser or a provider's server could read as a
 * step out of the provider's base path: `.` or `..`, an encoded `/` or `\`, a backslash
 * (WHATWG URLs read it as `/`), or a control character (tabs and newlines are dropped by
 * the URL parser, so `.%09.` becomes `..`).
 */
export function escapesBase(segment: string): boolean {
  let s = segment;
  for (let round = 0; ; round++) {
    if (s === '.' || s === '..' || /[\\\u0000-\u001f\u007f]/.test(s)) return true;
    if (!s.includes('%')) return false;
    if (round === DECODE_ROUNDS) return true;
    let decoded: string;
    try {
      decoded = decodeURIComponent(s);
    } catch {
      return true; // a malformed escape: nothing a provider path needs
    }
    if (decoded.includes('/')) return true;
    s = decoded;
  }
}
