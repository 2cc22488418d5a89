/**
 * Shared plumbing for the fake provider servers (test/fakes): a node:http server on
 * 127.0.0.1 with a random port, a log of every request, and the knobs every fake honours
 * (error injection, latency, mid-stream cut, in-stream error, slow streaming).
 *
 * Knobs, per request (headers win over `setBehaviour`, which wins over model names, which
 * win over the start options):
 * - `x-fake-status: 503`          reply with that status and the provider's own error body
 *                                  (model names `fail-500`, `fail-429`, … anywhere in the model)
 * - `x-fake-retry-after: 1`       add `retry-after: 1` to error replies
 * - `x-fake-latency-ms: 200`      wait before the response starts
 * - `x-fake-chunk-delay-ms: 50`   wait between stream frames
 * - `x-fake-cut-after: N`         streams: send N frames then destroy the socket (model `cut-stream`: N=2);
 *                                  JSON replies: destroy the socket without answering
 * - `promptCache: {read, write}` (setBehaviour only): usage reports that many prompt tokens
 *                                  read from / written to the provider's prompt cache
 * - `x-fake-stream-error: <type>` streams: send the provider's in-stream error frame after
 *                                  `cut-after` (default 2) frames and end the stream cleanly
 *                                  (model `stream-error`); `<type>` picks the error type, `1` the default
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseMultipart, type MultipartForm } from './multipart';

export interface RecordedRequest {
  /** 1-based sequence number on this fake. */
  seq: number;
  method: string;
  /** Raw path as it arrived (not percent-decoded), without the query string. */
  path: string;
  /** Raw request target (path + query). */
  url: string;
  query: Record<string, string>;
  /** Lower-case names; repeated headers joined with `, `. */
  headers: Record<string, string>;
  rawBody: Buffer;
  /** Parsed JSON body, or undefined when the body is not JSON. */
  body: unknown;
  /** Parsed multipart/form-data body, when it is one. */
  form?: MultipartForm;
  /** The model as the fake understood it (from the body, the path or a form field). */
  model?: string;
  /** Route parameters the fake decoded from the path (e.g. Bedrock `modelId`, Vertex `project`). */
  params: Record<string, string>;
}

/** An ad-hoc reply a test wants instead of the fake's normal one. */
export interface FakeReply {
  status: number;
  headers?: Record<string, string>;
  /** Objects are sent as JSON; strings and Buffers as they are. */
  body?: unknown;
}

export interface Behaviour {
  /** Reply with this status and the provider's error body. */
  status?: number;
  /** Apply `status` (or `respond`) to the next N requests only; default: every request. */
  times?: number;
  /** Error message to put in injected error bodies. */
  message?: string;
  /** Seconds for the `retry-after` header on injected errors. */
  retryAfter?: number;
  latencyMs?: number;
  chunkDelayMs?: number;
  cutAfter?: number;
  /** In-stream error: `true` for the provider's default type, or a type name. */
  streamError?: string | true;
  /**
   * Report prompt-cache usage as the provider does: `read` prompt tokens served from its
   * cache, `write` written to it (Anthropic and Bedrock report writes; OpenAI and Gemini
   * only reads). Counted on top of the prompt's own tokens.
   */
  promptCache?: PromptCache;
  /** Fully custom reply; return undefined to let the fake answer normally. */
  respond?: (req: RecordedRequest) => FakeReply | undefined;
}

export interface PromptCache {
  read?: number;
  write?: number;
  /** Of `write`, how many for one hour (Anthropic `cache_creation.ephemeral_1h_input_tokens`). */
  write1h?: number;
}

export interface FakeOptions {
  /** Fixed latency before every response starts. */
  latencyMs?: number;
  /** Fixed delay between stream frames. */
  chunkDelayMs?: number;
  /** When set, only this API key is accepted (header-auth providers). */
  apiKey?: string;
  /** Accept calls without a key, as Ollama does (the demo model, `npm run demo-model`). */
  keyless?: boolean;
  /** Listen on this port instead of a random one. */
  port?: number;
  /** Initial behaviour (same as calling setBehaviour right after start). */
  behaviour?: Behaviour;
}

export interface FakeServer {
  readonly name: string;
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  readonly url: string;
  readonly port: number;
  /** Every request received, oldest first (cleared by reset). */
  readonly requests: RecordedRequest[];
  /** How many requests arrived (optionally: whose path contains / matches `filter`, or pass a predicate). */
  count(filter?: string | RegExp | ((r: RecordedRequest) => boolean)): number;
  last(): RecordedRequest | undefined;
  /** Merge into the current behaviour (`{status: undefined}` clears a key). */
  setBehaviour(b: Behaviour): void;
  /** Forget requests and behaviour (start options stay). */
  reset(): void;
  close(): Promise<void>;
}

/** Knobs resolved for one request. */
export interface Knobs {
  status?: number;
  message?: string;
  retryAfter?: number;
  latencyMs?: number;
  chunkDelayMs?: number;
  cutAfter?: number;
  streamError?: string | true;
  promptCache?: PromptCache;
}

/** The provider's error reply for a status (body shape and headers). */
export type ErrorShaper = (status: number, message: string, type?: string) => { body: unknown; headers?: Record<string, string> };

export type Frame = string | Uint8Array;

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class Exchange {
  knobs: Knobs = {};
  private custom?: FakeReply;

  constructor(
    readonly rec: RecordedRequest,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    private readonly state: FakeState,
    private readonly shapeError: ErrorShaper,
  ) {}

  get apiKey(): string | undefined {
    return this.state.options.apiKey;
  }

  get keyless(): boolean {
    return this.state.options.keyless === true;
  }

  /**
   * Apply the common behaviours once the model is known: latency, custom replies, error
   * injection. Returns false when a reply was already sent and the handler must stop.
   * `streaming` says whether the reply will be a stream (a cut on a non-stream reply
   * destroys the socket without answering).
   */
  async begin(model: string | undefined, streaming: boolean): Promise<boolean> {
    if (model !== undefined) this.rec.model = model;
    const k = resolveKnobs(this.state, this.rec);
    this.knobs = k;
    if (k.latencyMs) await sleep(k.latencyMs);
    if (this.custom) {
      this.send(this.custom);
      return false;
    }
    if (k.status && k.status >= 400) {
      this.error(k.status, k.message ?? `Injected error ${k.status}`);
      return false;
    }
    if (k.cutAfter !== undefined && !streaming) {
      this.res.destroy();
      return false;
    }
    return true;
  }

  /** Take a custom reply chosen by `behaviour.respond` (set by the server before the handler). */
  setCustom(reply: FakeReply | undefined) {
    this.custom = reply;
  }

  json(status: number, body: unknown, headers: Record<string, string> = {}) {
    const text = JSON.stringify(body);
    this.res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(text)),
      ...headers,
    });
    this.res.end(text);
  }

  /** The provider's own error body; adds retry-after when asked. */
  error(status: number, message: string, type?: string) {
    const { body, headers = {} } = this.shapeError(status, message, type);
    if (this.knobs.retryAfter !== undefined) headers['retry-after'] = String(this.knobs.retryAfter);
    this.json(status, body, headers);
  }

  send(reply: FakeReply) {
    const { status, headers = {}, body } = reply;
    if (body === undefined || typeof body === 'string' || Buffer.isBuffer(body) || body instanceof Uint8Array) {
      this.res.writeHead(status, headers);
      this.res.end(body);
    } else {
      this.json(status, body, headers);
    }
  }

  /**
   * Write a stream of frames with the knobs applied. `errorFrame` builds the provider's
   * in-stream error for `streamError`; without it, a stream error behaves like a cut.
   */
  async stream(
    contentType: string,
    frames: Frame[],
    opts: { headers?: Record<string, string>; errorFrame?: (type: string | undefined, message: string) => Frame } = {},
  ): Promise<void> {
    const { res } = this;
    res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-cache', ...opts.headers });
    res.flushHeaders();
    const { cutAfter, streamError, chunkDelayMs } = this.knobs;
    const limit = streamError !== undefined ? (cutAfter ?? 2) : cutAfter;
    const n = limit === undefined ? frames.length : Math.min(limit, frames.length);
    for (let i = 0; i < n; i++) {
      if (i > 0 && chunkDelayMs) await sleep(chunkDelayMs);
      if (!(await write(res, frames[i]!))) return;
    }
    if (streamError !== undefined && opts.errorFrame) {
      if (chunkDelayMs) await sleep(chunkDelayMs);
      const type = streamError === true ? undefined : streamError;
      await write(res, opts.errorFrame(type, this.knobs.message ?? 'Injected stream error'));
      res.end();
      return;
    }
    if (limit !== undefined && limit < frames.length + (streamError !== undefined ? 1 : 0)) {
      res.destroy();
      return;
    }
    res.end();
  }
}

function write(res: ServerResponse, frame: Frame): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return Promise.resolve(false);
  return new Promise((resolve) => res.write(frame, (err) => resolve(!err && !res.destroyed)));
}

interface FakeState {
  options: FakeOptions;
  behaviour: Behaviour;
}

function intHeader(v: string | undefined): number | undefined {
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
}

function resolveKnobs(state: FakeState, rec: RecordedRequest): Knobs {
  const { options, behaviour: b } = state;
  const k: Knobs = { latencyMs: options.latencyMs, chunkDelayMs: options.chunkDelayMs };
  const model = rec.model ?? '';
  const fail = /fail-(\d{3})/.exec(model);
  if (fail) k.status = Number(fail[1]);
  if (model.includes('cut-stream')) k.cutAfter = 2;
  if (model.includes('stream-error')) k.streamError = true;

  if (b.status !== undefined && b.times !== 0) {
    k.status = b.status;
    if (b.times !== undefined) b.times--;
  }
  if (b.message !== undefined) k.message = b.message;
  if (b.retryAfter !== undefined) k.retryAfter = b.retryAfter;
  if (b.latencyMs !== undefined) k.latencyMs = b.latencyMs;
  if (b.chunkDelayMs !== undefined) k.chunkDelayMs = b.chunkDelayMs;
  if (b.cutAfter !== undefined) k.cutAfter = b.cutAfter;
  if (b.streamError !== undefined) k.streamError = b.streamError;
  if (b.promptCache !== undefined) k.promptCache = b.promptCache;

  const h = rec.headers;
  k.status = intHeader(h['x-fake-status']) ?? k.status;
  k.retryAfter = intHeader(h['x-fake-retry-after']) ?? k.retryAfter;
  k.latencyMs = intHeader(h['x-fake-latency-ms']) ?? k.latencyMs;
  k.chunkDelayMs = intHeader(h['x-fake-chunk-delay-ms']) ?? k.chunkDelayMs;
  k.cutAfter = intHeader(h['x-fake-cut-after']) ?? k.cutAfter;
  const se = h['x-fake-stream-error'];
  if (se) k.streamError = se === '1' || se === 'true' ? true : se;
  return k;
}

function flatHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

function parseJson(raw: Buffer, contentType: string): unknown {
  if (raw.length === 0) return undefined;
  const first = raw[0];
  if (!contentType.includes('json') && first !== 0x7b && first !== 0x5b) return undefined;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Start a fake: `handle` answers one request (after the body is read and recorded).
 * `shapeError` gives the provider's error body; it is also used for 404s and crashes.
 */
export async function startFake(name: string, options: FakeOptions, shapeError: ErrorShaper, handle: (ex: Exchange) => Promise<void>): Promise<FakeServer> {
  const state: FakeState = { options, behaviour: { ...options.behaviour } };
  const requests: RecordedRequest[] = [];
  let seq = 0;

  const server: Server = createServer({ noDelay: true }, (req, res) => {
    void (async () => {
      const raw = await readBody(req);
      const target = new URL(req.url ?? '/', 'http://fake');
      const headers = flatHeaders(req);
      const contentType = headers['content-type'] ?? '';
      const rec: RecordedRequest = {
        seq: ++seq,
        method: req.method ?? 'GET',
        path: (req.url ?? '/').split('?')[0]!,
        url: req.url ?? '/',
        query: Object.fromEntries(target.searchParams),
        headers,
        rawBody: raw,
        body: parseJson(raw, contentType),
        params: {},
      };
      if (contentType.startsWith('multipart/form-data')) rec.form = parseMultipart(raw, contentType);
      requests.push(rec);
      const ex = new Exchange(rec, req, res, state, shapeError);
      const respond = state.behaviour.respond;
      if (respond && state.behaviour.times !== 0) {
        const custom = respond(rec);
        if (custom && state.behaviour.times !== undefined) state.behaviour.times--;
        ex.setCustom(custom);
      }
      await handle(ex);
    })().catch((err: unknown) => {
      if (!res.headersSent) {
        const { body, headers } = shapeError(500, `fake ${name} crashed: ${String(err)}`);
        res.writeHead(500, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      } else {
        res.destroy();
      }
    });
  });

  // As providers' front ends do, idle connections are kept well past the gateway's pool
  // (FREE_SOCKET_TIMEOUT_MS, 4 s): Node's default of 5 s left a one-second margin that a
  // loaded machine's late timers could close, resetting a request sent on a reused socket.
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    name,
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    count(filter) {
      if (filter === undefined) return requests.length;
      if (typeof filter === 'string') return requests.filter((r) => r.path.includes(filter)).length;
      if (filter instanceof RegExp) return requests.filter((r) => filter.test(r.path)).length;
      return requests.filter(filter).length;
    },
    last: () => requests[requests.length - 1],
    setBehaviour(b) {
      // A new status / respond without `times` applies to every request again.
      if ((b.status !== undefined || b.respond !== undefined) && !('times' in b)) delete state.behaviour.times;
      Object.assign(state.behaviour, b);
    },
    reset() {
      requests.length = 0;
      state.behaviour = { ...options.behaviour };
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/** Bearer token from `authorization`, if any. */
export function bearer(rec: RecordedRequest): string | undefined {
  const m = /^Bearer\s+(.+)$/i.exec(rec.headers.authorization ?? '');
  return m?.[1]?.trim();
}

/** Narrow an unknown to a plain object (or an empty one). */
export function obj(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

export function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
