import type { Readable } from 'node:stream';
import type { GatewayError } from '../errors';
import type { RequestContext } from '../telemetry/context';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** What a key may do besides its role: `gateway` is model traffic. */
export type Scope = 'gateway';

/** What a key may manage, lowest first: functions/shared/auth/roles.ts. */
export type Role = 'viewer' | 'member' | 'workspace-admin' | 'org-admin';

/**
 * What a route needs: `gateway` (model traffic), or the role level that may use it (which
 * roles each admits: functions/shared/auth/roles.ts). `public`: no credential at all (the
 * console's sign-in routes, which check what they need themselves); `req.auth` is unset.
 */
export type Access = 'public' | 'gateway' | Role;

/**
 * One entry of a key's MCP allow-list (`allowed_mcp`): a registered server's slug and, when
 * given, the only tools of it the key may list and call (absent or null: all of them).
 */
export interface McpAllowance {
  server: string;
  tools?: string[] | null;
}

export interface AuthContext {
  keyId: string;
  workspaceId: string;
  organisationId: string;
  role: Role;
  scopes: readonly Scope[];
  /** The key's default config (a saved config's id or slug, or inline JSON), used when a request names no provider. */
  defaultConfig?: string;
  /** The key's MCP allow-list; absent: every server and tool of the workspace. */
  allowedMcp?: readonly McpAllowance[];
  /** Who signed in, when the request came with a console session (the key's id, or the single-sign-on user). */
  subject?: string;
}

export interface GatewayRequest {
  method: string;
  /** Path without the API Gateway stage, e.g. `/v1/chat/completions`. */
  path: string;
  /**
   * What the caller's URL has before `path`: the API Gateway stage (`/prod`) or a custom
   * domain's base path; '' locally. A URL the gateway hands out for itself is built with it.
   */
  basePath?: string;
  /** Values of `{name}` segments in the matched route. */
  params: Record<string, string>;
  /** First value of each query parameter. */
  query: Record<string, string>;
  /** The query string as the caller sent it (re-encoded), without the `?`. */
  rawQuery: string;
  /** Header names lower-cased; repeated headers joined with `, `. */
  headers: Record<string, string>;
  body: Buffer;
  /** Parsed JSON body; throws a 400 on malformed JSON. Cached after the first call. */
  json(): unknown;
  traceId: string;
  /** This request's trace id and after-response work; give it to `log` and `afterResponse`. */
  context: RequestContext;
  /** Set by the kernel before the route handler runs. */
  auth: AuthContext;
  receivedAt: number;
}

/**
 * What the inference pipeline reads of a request: who asks (workspace, key), how to route
 * (the `x-gateway-*` headers), and what its log and after-response work hang on. A feature
 * calling a model on its own behalf (the assistants engine) builds one without a body.
 */
export type CallerRequest = Pick<GatewayRequest, 'method' | 'path' | 'headers' | 'traceId' | 'context' | 'auth' | 'receivedAt'>;

export type ResponseBody = string | Buffer | Readable;

export interface HttpResponse {
  statusCode: number;
  headers?: Record<string, string>;
  body?: ResponseBody;
}

export type Handler = (req: GatewayRequest) => Promise<HttpResponse>;

/**
 * A step around a route's handler (after authentication and routing): it calls `next()`
 * for the rest of the chain, or answers (or throws) without calling it.
 */
export type Middleware = (req: GatewayRequest, next: () => Promise<HttpResponse>) => Promise<HttpResponse>;

export interface Route {
  method: HttpMethod;
  /** `/v1/things/{id}`; a final `{proxy+}` matches the rest of the path. */
  path: string;
  access: Access;
  /** Name used in logs and metrics; defaults to `METHOD path`. */
  name?: string;
  /** Run around `handler`, the first one outermost. */
  use?: readonly Middleware[];
  handler: Handler;
  /**
   * A query parameter that may carry the gateway key (the Gemini API's `key`), read when no
   * key header was sent and removed from the request once read.
   */
  keyInQuery?: string;
  /**
   * How the kernel answers its own errors on this route (authentication, body limit):
   * a dialect route answers them in its API's shape. Default: the OpenAI error shape.
   */
  errorResponse?: (err: GatewayError) => HttpResponse;
}
