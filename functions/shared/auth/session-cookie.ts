/**
 * The console session cookie's name and how a request carries it, without the token code
 * (console-session.ts, loaded only when a request has the cookie): the key check reads
 * this on every request, so it stays out of the gateway's cold-start code.
 */
export const SESSION_COOKIE = 'gw_console';
export const CSRF_HEADER = 'x-csrf-token';
/** A cookie header longer than this is not the gateway's (a session token is well under 1 KB). */
const MAX_COOKIE_HEADER = 8192;

/** The session cookie's value, if the request carries one. */
export function sessionTokenFrom(headers: Record<string, string>): string | undefined {
  const header = headers.cookie;
  if (!header || header.length > MAX_COOKIE_HEADER) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}
