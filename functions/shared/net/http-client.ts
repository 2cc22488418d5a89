import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { pipeline, type Readable } from 'node:stream';
import zlib from 'node:zlib';
import { config } from '../config';
import { badRequest, GatewayError, requestTimeout, upstreamError, upstreamIdleTimeout, upstreamTooLarge } from '../errors';
import type { UpstreamRequest } from './upstream-request';
import type { AbortLike } from '../telemetry/context';
import { assertSafeUrl, BLOCKED_HOST_CODE, createGuardedLookup, isTrustedHost, type Resolver } from './ssrf';

/**
 * The one outbound HTTP client of the gateway (issue «Data plane»). Built on node:http and
 * node:https (no fetch/undici, so nothing extra in the bundle):
 *
 * - Keep-alive agents, created once per container (per client; the default client lives at
 *   module scope). Their `lookup` is the SSRF-guarded DNS lookup, so every host name is
 *   resolved to ALL its addresses and refused if any is private/reserved, and the socket
 *   connects to exactly those addresses (no DNS-rebinding window).
 * - `assertSafeUrl` runs before every request (scheme, userinfo, IP-literal hosts, names).
 * - Redirects are NEVER followed: a 3xx is returned to the caller as is. node:http has no
 *   redirect support, and nothing here adds it, so a `Location` pointing at a blocked host
 *   can never be fetched by the gateway. Whoever wants to follow one must send a new
 *   request through `sendUpstream`, which vets the new URL again.
 * - `timeoutMs` bounds the whole exchange (408 `request_timeout`): before the headers the
 *   promise rejects, after them the body stream is destroyed with that error.
 *   `idleTimeoutMs` bounds the silence between body bytes (504 `upstream_idle_timeout`).
 *   `signal` aborts the request at any time, and after the headers it destroys the body
 *   stream with an AbortError. Any other body failure is a 502 `upstream_response_ended`.
 * - A request is written once: never resent by the client, not even after a reset of a
 *   reused keep-alive socket (the provider may already run and bill it). Stale pooled
 *   sockets are dropped instead (FREE_SOCKET_TIMEOUT_MS).
 * - `accept-encoding: identity` unless the request names one; a gzip, deflate or br body
 *   that arrives anyway is decoded (streamed, so size limits apply to decoded bytes).
 * - Errors never carry request headers, credentials or the URL's path/query; only the host.
 *
 * Hosts in the trusted list (GATEWAY_TRUSTED_HOSTS, or `trustedHosts` per request) skip the
 * address checks. Trusted host NAMES are sent through separate agents whose lookup does no
 * checks, so the guarded agents' pools only ever hold sockets to vetted addresses.
 */

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[]>;
  /**
   * The response body as it arrives (not buffered), decoded when the upstream compressed it.
   * Consume or destroy it. It fails with a GatewayError: 408 `request_timeout` (the exchange's
   * deadline), 504 `upstream_idle_timeout`, 502 `upstream_response_ended` (reset, cut short)
   * or 502 `invalid_upstream_response` (undecodable); or with an AbortError (signal).
   */
  body: Readable;
}

export type SendUpstreamRequest = UpstreamRequest & {
  signal?: AbortLike;
  /** Time allowed for the whole exchange, headers and body; default config().defaultUpstreamTimeoutMs. */
  timeoutMs?: number;
  /** Longest silence between body bytes once the headers arrived; default config().upstreamIdleTimeoutMs. */
  idleTimeoutMs?: number;
  /** Hosts admitted despite the SSRF checks; default config().trustedHosts. */
  trustedHosts?: readonly string[];
  /** Header or field the URL came from, reported as `param` of a `blocked_custom_host` error. */
  param?: string;
};

/** Rejection of a request (or destruction of a response body) aborted through its signal. */
export class AbortError extends Error {
  readonly code = 'ABORT_ERR';
  constructor(message = 'The upstream request was aborted.', options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AbortError';
  }
}

export interface UpstreamClientOptions {
  /** DNS resolver used by the agents (tests inject one); the system resolver by default. */
  resolve?: Resolver;
}

export interface UpstreamClient {
  sendUpstream(req: SendUpstreamRequest): Promise<UpstreamResponse>;
  /** Close every pooled socket (tests; a Lambda container never needs it). */
  destroy(): void;
}

/** setTimeout overflows above 2^31-1 ms and would fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

const ERROR_TEXT: Record<string, string> = {
  ECONNREFUSED: 'the connection was refused',
  ECONNRESET: 'the connection was reset',
  EPIPE: 'the connection was closed while sending the request',
  ENOTFOUND: 'the host name could not be resolved',
  EAI_AGAIN: 'the host name could not be resolved (temporary DNS failure)',
  ETIMEDOUT: 'the connection timed out',
  EHOSTUNREACH: 'the host is unreachable',
  ENETUNREACH: 'the network is unreachable',
  ECONNABORTED: 'the connection was aborted',
  HPE_INVALID_CONSTANT: 'the upstream sent an invalid HTTP response',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'its TLS certificate is self-signed',
  SELF_SIGNED_CERT_IN_CHAIN: 'its TLS certificate chain is self-signed',
  CERT_HAS_EXPIRED: 'its TLS certificate has expired',
  ERR_TLS_CERT_ALTNAME_INVALID: 'its TLS certificate does not match the host name',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'its TLS certificate could not be verified',
};

function describeError(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== 'string') return 'the connection failed';
  const text = ERROR_TEXT[code] ?? (code.startsWith('HPE_') ? 'the upstream sent an invalid HTTP response' : 'the connection failed');
  return `${text} (${code})`;
}

function abortErrorOf(signal: AbortLike): AbortError {
  return new AbortError('The upstream request was aborted.', { cause: signal.reason });
}

/**
 * The response's own header object (Node never puts undefined values in it), not a copy:
 * the response belongs to this exchange, and `decoded` may drop the encoding headers from it.
 */
const headersOf = (res: IncomingMessage): Record<string, string | string[]> => res.headers as Record<string, string | string[]>;

/** A body failure that is not already ours becomes 502 `upstream_response_ended`. */
function bodyEnded(host: string, err: unknown): GatewayError {
  return upstreamError(`The response from '${host}' ended before it was complete: ${describeError(err)}.`, 'upstream_response_ended');
}

/**
 * Make every error a body stream fails with one of ours (GatewayError or AbortError), so a
 * consumer can answer or end a stream with it as it is. Wraps the stream's own `_destroy`,
 * which every failure path (reset, premature close, parser error, destroy(err)) goes through.
 */
function mapBodyErrors(stream: Readable, toError: (err: unknown) => GatewayError): void {
  const destroy = stream._destroy;
  stream._destroy = function (this: Readable, err: Error | null, callback: (error?: Error | null) => void) {
    destroy.call(this, err, (e) => callback(e && !(e instanceof GatewayError) && !(e instanceof AbortError) ? toError(e) : e));
  };
}

const DECODERS: Record<string, () => zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
};

/**
 * The body decoded when the upstream compressed it although asked not to (gzip, deflate,
 * br): `content-encoding` and `content-length` are dropped from `headers`, since they
 * describe the encoded bytes. Decoding is streamed, so a size limit on the decoded bytes
 * (readBody) stops a decompression bomb early. Other encodings are left as they are.
 */
function decoded(res: IncomingMessage, headers: Record<string, string | string[]>, host: string): Readable {
  mapBodyErrors(res, (err) => bodyEnded(host, err));
  const encoding = headers['content-encoding'];
  const decoder = typeof encoding === 'string' ? DECODERS[encoding.trim().toLowerCase()] : undefined;
  if (!decoder) return res;
  delete headers['content-encoding'];
  delete headers['content-length'];
  const out = decoder();
  mapBodyErrors(out, (err) =>
    upstreamError(`The response from '${host}' could not be decoded as ${String(encoding)}: ${(err as Error).message}.`, 'invalid_upstream_response'),
  );
  // Destroying the decoded stream (caller gone, size limit) destroys the upstream body too.
  pipeline(res, out, () => {});
  return out;
}

/**
 * Pooled sockets idle longer than this are closed, below the keep-alive timeout of common
 * servers (Node.js 5 s; nginx, load balancers and CDNs more), so a request is not written
 * to a socket the server is closing. Node's agents also honour a shorter `Keep-Alive:
 * timeout=` hint from the server.
 */
export const FREE_SOCKET_TIMEOUT_MS = 4_000;

/**
 * The agents' idle timer cannot fire while a Lambda sandbox is frozen, and on thaw the next
 * request can take a socket before it runs: so each socket also remembers when it was
 * freed, and sockets older than FREE_SOCKET_TIMEOUT_MS are dropped before a request is
 * assigned one.
 */
function withFreshSockets<A extends http.Agent>(agent: A): A {
  const freedAt = new WeakMap<object, number>();
  const keepSocketAlive = agent.keepSocketAlive.bind(agent);
  agent.keepSocketAlive = (socket) => {
    freedAt.set(socket, Date.now());
    return keepSocketAlive(socket);
  };
  const addRequest = (agent as unknown as { addRequest: (...args: unknown[]) => void }).addRequest.bind(agent);
  (agent as unknown as { addRequest: (...args: unknown[]) => void }).addRequest = (...args: unknown[]) => {
    const staleBefore = Date.now() - FREE_SOCKET_TIMEOUT_MS;
    for (const name in agent.freeSockets) {
      const free = agent.freeSockets[name];
      if (!free) continue;
      // A pool lists its sockets in the order they were freed, so the stale ones are at its
      // start: a request looks at one socket when none is stale, not at the whole pool.
      let stale = 0;
      while (stale < free.length && (freedAt.get(free[stale]!) ?? 0) < staleBefore) stale++;
      if (stale) for (const socket of free.splice(0, stale)) socket.destroy();
    }
    addRequest(...args);
  };
  return agent;
}

/** Build a client with its own keep-alive agents (one default client exists per container). */
export function createUpstreamClient(opts: UpstreamClientOptions = {}): UpstreamClient {
  // Guarded agents trust nothing at the DNS step: trust is decided per request, by choosing
  // the trusted agents below, so one request's trust list never leaks into another's.
  const guarded = createGuardedLookup({ trustedHosts: [], resolve: opts.resolve });
  const unguarded = createGuardedLookup({ guard: false, resolve: opts.resolve });
  const base = { keepAlive: true, scheduling: 'lifo' as const, timeout: FREE_SOCKET_TIMEOUT_MS };
  const agents = {
    http: withFreshSockets(new http.Agent({ ...base, lookup: guarded })),
    https: withFreshSockets(new https.Agent({ ...base, lookup: guarded })),
    trustedHttp: withFreshSockets(new http.Agent({ ...base, lookup: unguarded })),
    trustedHttps: withFreshSockets(new https.Agent({ ...base, lookup: unguarded })),
  };

  function sendUpstream(req: SendUpstreamRequest): Promise<UpstreamResponse> {
    const trustedHosts = req.trustedHosts ?? config().trustedHosts;
    let url: URL;
    try {
      url = assertSafeUrl(req.url, { trustedHosts, param: req.param });
    } catch (err) {
      return Promise.reject(err);
    }
    const signal = req.signal;
    if (signal?.aborted) return Promise.reject(abortErrorOf(signal));
    const timeoutMs = Math.max(1, Math.min(req.timeoutMs ?? config().defaultUpstreamTimeoutMs, MAX_TIMER_MS));
    const idleTimeoutMs = Math.max(1, Math.min(req.idleTimeoutMs ?? config().upstreamIdleTimeoutMs, MAX_TIMER_MS));

    const isHttps = url.protocol === 'https:';
    const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    // IP literals never reach a lookup; trusted NAMES go through the unchecked agents.
    const trustedName = isIP(hostname) === 0 && isTrustedHost(hostname, trustedHosts);
    const agent = isHttps ? (trustedName ? agents.trustedHttps : agents.https) : trustedName ? agents.trustedHttp : agents.http;

    // Uncompressed answers by default (no inflate on the hot path); what arrives compressed
    // anyway is decoded below.
    const headers: Record<string, string> = { 'accept-encoding': 'identity' };
    for (const [name, value] of Object.entries(req.headers)) {
      const lower = name.toLowerCase();
      if (lower === 'accept-encoding') headers['accept-encoding'] = value;
      else if (lower !== 'content-length') headers[name] = value;
    }
    const body = req.body === undefined ? undefined : typeof req.body === 'string' ? Buffer.from(req.body, 'utf8') : req.body;
    if (body !== undefined) headers['content-length'] = String(body.length);

    const options: http.RequestOptions = {
      hostname,
      port: url.port === '' ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      method: req.method,
      headers,
      agent,
    };

    const mapError = (err: unknown): Error => {
      if (err instanceof GatewayError) {
        // A blocked DNS answer from the guarded lookup.
        return req.param && err.code === BLOCKED_HOST_CODE ? badRequest(err.message, req.param, err.code) : err;
      }
      return upstreamError(`Could not reach the upstream host '${url.host}': ${describeError(err)}.`);
    };

    return new Promise<UpstreamResponse>((resolve, reject) => {
      let settled = false;
      let response: IncomingMessage | undefined;

      const detach = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const fail = (err: Error) => {
        if (settled) return;
        settled = true;
        detach();
        r.destroy();
        reject(err);
      };
      function onAbort() {
        const err = abortErrorOf(signal!);
        if (response) {
          detach();
          response.destroy(err);
        } else {
          fail(err);
        }
      }
      // One deadline for the whole exchange: before the headers it rejects, after them it
      // destroys the body with the same 408.
      const timer = setTimeout(() => {
        if (response) response.destroy(requestTimeout(timeoutMs));
        else fail(requestTimeout(timeoutMs));
      }, timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });

      const r = (isHttps ? https : http).request(options);
      r.on('response', (res) => {
        if (settled) {
          res.destroy();
          return;
        }
        settled = true;
        response = res;
        // The socket's own inactivity timer (re-armed by Node on every read) bounds the
        // silence between body bytes; no timer per chunk.
        r.setTimeout(idleTimeoutMs, () => res.destroy(upstreamIdleTimeout(idleTimeoutMs)));
        // Keep listening to the signal and the deadline while the body streams; stop once it is done.
        res.once('close', detach);
        const headers = headersOf(res);
        resolve({ status: res.statusCode ?? 0, headers, body: decoded(res, headers, url.host) });
      });
      // Stays attached for the life of the request: later socket errors surface on the
      // response stream instead, and must not crash the process as unhandled 'error's.
      // A request is sent once: a reset, even on a reused keep-alive socket, is this
      // attempt's failure (the provider may have started, and billed, the work); retries
      // are the routing's, when configured. Stale pooled sockets are avoided instead (agents).
      r.on('error', (err: NodeJS.ErrnoException) => fail(mapError(err)));
      r.end(body);
    });
  }

  return {
    sendUpstream,
    destroy() {
      for (const a of Object.values(agents)) a.destroy();
    },
  };
}

/** The container's client: agents created once, at module load. */
const defaultClient = createUpstreamClient();

/**
 * Send one request to a provider or custom host. Resolves once the response headers are in
 * (any status, 3xx included: redirects are never followed); the body is a stream.
 */
export function sendUpstream(req: SendUpstreamRequest): Promise<UpstreamResponse> {
  return defaultClient.sendUpstream(req);
}

/**
 * Buffer a response body (for non-streamed translation), refusing more than `limitBytes`:
 * the stream is destroyed and a 502 `upstream_response_too_large` raised. An AbortError
 * (signal) is passed through; any other stream failure becomes a 502.
 */
export function readBody(res: Readable & { headers?: http.IncomingHttpHeaders }, limitBytes: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    let settled = false;
    const chunks: Buffer[] = [];
    let size = 0;
    const tooLarge = () => upstreamTooLarge(`The upstream response body exceeds the limit of ${limitBytes} bytes.`, 'upstream_response_too_large');
    const finish = (err: Error | null) => {
      if (settled) return;
      settled = true;
      res.off('data', onData);
      if (err) {
        res.destroy();
        reject(err);
      } else {
        resolve(Buffer.concat(chunks, size));
      }
    };
    const onData = (chunk: Buffer | string) => {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      size += buf.length;
      if (size > limitBytes) return finish(tooLarge());
      chunks.push(buf);
    };

    const declared = Number(res.headers?.['content-length']);
    if (Number.isFinite(declared) && declared > limitBytes) return finish(tooLarge());

    res.on('data', onData);
    res.once('end', () => finish(null));
    res.once('error', (err) =>
      finish(
        err instanceof AbortError || err instanceof GatewayError
          ? err
          : upstreamError(`The upstream response ended early: ${describeError(err)}.`, 'upstream_response_ended'),
      ),
    );
    res.once('close', () => {
      if (!settled) finish(upstreamError('The upstream response ended before it was complete.', 'upstream_response_ended'));
    });
    if (res.readableEnded) finish(null);
  });
}
