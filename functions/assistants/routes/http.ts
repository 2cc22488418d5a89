import { notFound } from '../../shared/errors';
import { idempotency } from '../../shared/http/idempotency';
import type { GatewayRequest, HttpMethod, HttpResponse, Middleware, Route } from '../../shared/http/types';
import { parseInput, type z } from '../../shared/validation';
import { assistantProviderFromHeaders } from '../credentials';
import { MAX_ID_LENGTH } from '../store/db';
import { rejectUnsupportedTools } from './schemas';

/** What every assistant-group handler gets besides the request. */
export interface AssistantContext {
  workspaceId: string;
}

type Handler = (req: GatewayRequest, ctx: AssistantContext) => Promise<HttpResponse>;

/**
 * The credentials rule, before every route of the group: a raw provider key is refused the
 * same way everywhere. A handler that needs the managed provider the headers name reads it
 * with `assistantProviderFromHeaders`, which can no longer refuse.
 */
const managedProviderOnly: Middleware = (req, next) => {
  assistantProviderFromHeaders(req);
  return next();
};

const ASSISTANT_MIDDLEWARE = [managedProviderOnly];
const CREATING_MIDDLEWARE = [managedProviderOnly, idempotency];

/**
 * A route of the assistants group, behind its middleware (`Vendor-Beta` / `OpenAI-Beta`
 * headers are accepted and not required). `creates`: the route creates an object or starts a
 * run, so it honours `Idempotency-Key`.
 */
export function route(method: HttpMethod, path: string, handler: Handler, options: { creates?: boolean } = {}): Route {
  const use = options.creates ? CREATING_MIDDLEWARE : ASSISTANT_MIDDLEWARE;
  return { method, path, access: 'gateway', use, handler: (req) => handler(req, { workspaceId: req.auth.workspaceId }) };
}

/** A JSON body (an empty body counts as `{}`), tool types checked, then parsed by `schema`. */
export function parseBody<T extends z.ZodMiniType>(req: GatewayRequest, schema: T): z.infer<T> {
  const raw = req.body.length === 0 ? {} : req.json();
  rejectUnsupportedTools(raw);
  return parseInput(schema, raw);
}

/** A path id; an over-long one cannot exist, so it is a 404 like any unknown id. */
export function pathId(req: GatewayRequest, name: string, what: string): string {
  const value = req.params[name]!;
  if (value.length > MAX_ID_LENGTH) throw notFound(`No ${what} '${value.slice(0, 64)}...' found.`, name);
  return value;
}
