import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import { config } from '../config';
import { badRequest, GatewayError, requestTimeout, upstreamError } from '../errors';
import type { UpstreamRequest } from './upstream-request';
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
 * - `timeoutMs` bounds the time until the response headers (408 `request_timeout`);
 *   `signal` aborts the request at any time, and after the headers it destroys the body
 *   stream with an AbortError.
 * - Errors never carry request headers, credentials or the URL's path/query; only the host.
 *
 * Hosts in the trusted list (GATEWAY_TRUSTED_HOSTS, or `trustedHosts` per request) skip the
 * address checks. Trusted host NAMES are sent through separate agents whose lookup does no
 * checks, so the guarded agents' pools only ever hold sockets to vetted addresses.
 */

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[]>;
  /** The response body as it arrives (not buffered). Consume or destroy it. */
  body: IncomingMessage;
}

export type SendUpstreamRequest = UpstreamRequest & {
  signal?: AbortSignal;
  /** Time allowed until the response headers; default config().defaultUpstreamTimeoutMs. */
  timeoutMs?: number;
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

function abortErrorOf(signal: AbortSignal): AbortError {
  return new AbortError('The upstream request was aborted.', { cause: signal.reason });
}

function headersOf(res: IncomingMessage): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(res.headers)) {
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** Build a client with its own keep-alive agents (one default client exists per container). */
export function createUpstreamClient(opts: UpstreamClientOptions = {}): UpstreamClient {
  // Guarded agents trust nothing at the DNS step: trust is decided per request, by choosing
  // the trusted agents below, so one request's trust list never leaks into another's.
  const guarded = createGuardedLookup({ trustedHosts: [], resolve: opts.resolve });
  const unguarded = createGuardedLookup({ guard: false, resolve: opts.resolve });
  const base = { keepAlive: true, scheduling: 'lifo' as const };
  const agents = {
    http: new http.Agent({ ...base, lookup: guarded }),
    https: new https.Agent({ ...base, lookup: guarded }),
    trustedHttp: new http.Agent({ ...base, lookup: unguarded }),
    trustedHttps: new https.Agent({ ...base, lookup: unguarded }),
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

    const isHttps = url.protocol === 'https:';
    const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    // IP literals never reach a lookup; trusted NAMES go through the unchecked agents.
    const trustedName = isIP(hostname) === 0 && isTrustedHost(hostname, trustedHosts);
    const agent = isHttps ? (trustedName ? agents.trustedHttps : agents.https) : trustedName ? agents.trustedHttp : agents.http;

    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (name.toLowerCase() !== 'content-length') headers[name] = value;
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
      let retried = false;
      let current: http.ClientRequest | undefined;
      let response: IncomingMessage | undefined;

      const detach = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const fail = (err: Error) => {
        if (settled) return;
        settled = true;
        detach();
        current?.destroy();
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
      const timer = setTimeout(() => fail(requestTimeout(timeoutMs)), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });

      const attempt = () => {
        const r = (isHttps ? https : http).request(options);
        current = r;
        r.on('response', (res) => {
          if (settled) {
            res.destroy();
            return;
          }
          settled = true;
          response = res;
          clearTimeout(timer);
          // Keep listening to the signal while the body streams; stop once it is done.
          res.once('close', detach);
          resolve({ status: res.statusCode ?? 0, headers: headersOf(res), body: res });
        });
        // Stays attached for the life of the request: later socket errors surface on the
        // response stream instead, and must not crash the process as unhandled 'error's.
        r.on('error', (err: NodeJS.ErrnoException) => {
          if (settled) return;
          // A pooled keep-alive socket the server had already closed (common after a Lambda
          // freeze): retry once on a fresh connection, as the Node.js docs recommend.
          if (!retried && r.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) {
            retried = true;
            attempt();
            return;
          }
          fail(mapError(err));
        });
        r.end(body);
      };
      attempt();
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
    const tooLarge = () => upstreamError(`The upstream response body exceeds the limit of ${limitBytes} bytes.`, 'upstream_response_too_large');
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
      finish(err instanceof AbortError || err instanceof GatewayError ? err : upstreamError(`The upstream response ended early: ${describeError(err)}.`)),
    );
    res.once('close', () => {
      if (!settled) finish(upstreamError('The upstream response ended before it was complete.'));
    });
    if (res.readableEnded) finish(null);
  });
}
