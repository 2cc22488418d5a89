import { badRequest } from '../shared/errors';

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
function escapesBase(segment: string): boolean {
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

/** `?` and `#` of a path the caller encoded (decoded on the way in) stay in the path. */
const escapeDelimiters = (path: string) => path.replace(/[?#]/g, (c) => (c === '?' ? '%3F' : '%23'));

/**
 * The caller's path after `/v1`, checked before it is appended to a provider's base URL:
 * a 400 `invalid_path` when a segment could climb out of the base (where the provider's
 * stored credential would go with it). Every route that forwards a caller's path goes
 * through here (`proxyRequest`).
 */
export function providerPath(path: string): string {
  for (const segment of path.split('/')) {
    if (escapesBase(segment)) {
      throw badRequest(
        `The path '${path.slice(0, 200)}' has a segment that is '.' or '..' or holds an encoded '/' or '\\' (in any encoding); such paths are not forwarded.`,
        'path',
        'invalid_path',
      );
    }
  }
  return escapeDelimiters(path);
}
