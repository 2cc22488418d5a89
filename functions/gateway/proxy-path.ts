import { badRequest } from '../shared/errors';
import { escapesBase } from '../shared/path-segment';

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
        `The path '${path.slice(0, 200)}' has a segment that is '.' or '..', or that holds a '/' or '\\' (in any encoding), a control character or a malformed %-escape; such paths are not forwarded.`,
        'path',
        'invalid_path',
      );
    }
  }
  return escapeDelimiters(path);
}
