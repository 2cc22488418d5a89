import { GatewayError, notFound } from '../errors';
import { compose } from './middleware';
import type { Handler, HttpMethod, Route } from './types';

interface CompiledRoute {
  route: Route;
  /** The route's handler inside its middleware. */
  handler: Handler;
  segments: string[];
  greedy: boolean;
}

/**
 * The longest `{param}` value (UTF-8 bytes) a route takes: every id and slug the gateway
 * makes is far shorter, and a longer one would exceed DynamoDB's key limits (1 KB sort key).
 */
export const MAX_PATH_PARAM_BYTES = 256;

export type RouteMatch =
  /** `oversized`: the name of a `{param}` longer than MAX_PATH_PARAM_BYTES (no object has such an id). */
  | { kind: 'match'; route: Route; handler: Handler; params: Record<string, string>; oversized?: string }
  | { kind: 'method_not_allowed'; allowed: HttpMethod[] }
  | { kind: 'not_found' };

const split = (path: string) => path.split('/').filter(Boolean);

/** A route table for one endpoint group: literal segments win over `{param}` segments. */
export class Router {
  private readonly compiled: CompiledRoute[];

  constructor(routes: readonly Route[]) {
    this.compiled = routes
      .map((route) => {
        const segments = split(route.path);
        const greedy = segments.at(-1) === '{proxy+}';
        const handler = route.use?.length ? compose(route.use, route.handler) : route.handler;
        return { route, handler, segments: greedy ? segments.slice(0, -1) : segments, greedy };
      })
      // More literal segments first, greedy routes last, so `/threads/runs` beats `/threads/{id}`.
      .sort((a, b) => Number(a.greedy) - Number(b.greedy) || literalWeight(b) - literalWeight(a));
  }

  match(method: string, path: string): RouteMatch {
    const parts = split(path);
    const allowed = new Set<HttpMethod>();
    for (const c of this.compiled) {
      const params = matchSegments(c, parts);
      if (!params) continue;
      if (c.route.method === method) {
        const oversized = Object.keys(params).find((name) => name !== 'proxy' && tooLong(params[name]!));
        return { kind: 'match', route: c.route, handler: c.handler, params, ...(oversized ? { oversized } : {}) };
      }
      allowed.add(c.route.method);
    }
    return allowed.size ? { kind: 'method_not_allowed', allowed: [...allowed] } : { kind: 'not_found' };
  }
}

/** UTF-8 takes at most 3 bytes per UTF-16 unit: most values are judged by their length alone. */
const tooLong = (value: string) => value.length * 3 > MAX_PATH_PARAM_BYTES && Buffer.byteLength(value) > MAX_PATH_PARAM_BYTES;

function literalWeight(c: CompiledRoute): number {
  return c.segments.reduce((n, s, i) => n + (s.startsWith('{') ? 0 : 2 ** (16 - i)), 0);
}

function matchSegments(c: CompiledRoute, parts: string[]): Record<string, string> | undefined {
  if (c.greedy ? parts.length <= c.segments.length : parts.length !== c.segments.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < c.segments.length; i++) {
    const seg = c.segments[i]!;
    const part = parts[i]!;
    if (seg.startsWith('{')) {
      let value: string;
      try {
        value = decodeURIComponent(part);
      } catch {
        return undefined;
      }
      params[seg.slice(1, -1)] = value;
    } else if (seg !== part) return undefined;
  }
  if (c.greedy) params.proxy = parts.slice(c.segments.length).join('/');
  return params;
}

export const routeNotFound = (method: string, path: string) => notFound(`Unknown route: ${method} ${path}. See the API reference for the paths under /v1.`);

export const oversizedParam = (name: string, value: string) =>
  notFound(`No object '${value.slice(0, 64)}…': a \`${name}\` in the path is at most ${MAX_PATH_PARAM_BYTES} bytes.`, name);

export const methodNotAllowed = (method: string, path: string, allowed: HttpMethod[]) =>
  new GatewayError(405, 'invalid_request_error', `Method ${method} is not allowed on ${path}. Allowed: ${allowed.join(', ')}.`, null, 'method_not_allowed', {
    allow: allowed.join(', '),
  });
