/**
 * A programmable, misbehaving OpenAI-shaped upstream for fault tests (issue «Hold under
 * faults»). One node:http server on 127.0.0.1 (random port); what it does with a request
 * is its `FaultMode`, chosen per request, first match wins:
 *
 * - modes queued with `failNext` (one per request, in order),
 * - the `x-fault-mode` request header,
 * - a model name `fault-<mode>` in the JSON body (survives every route's translation),
 * - a path segment `fault-<mode>` (for proxied GETs),
 * - the fake's current mode (`setMode`, default `ok`).
 *
 * Whatever the path, a request is answered as a chat completion (JSON, or SSE when the body
 * has `stream: true`); that is enough for chat, Responses and Messages (the gateway
 * translates) and for the generic proxy (relayed as is).
 *
 * Large bodies (`huge-body`, `huge-sse-line`) are generated chunk by chunk with
 * backpressure, never held in memory. The fake counts open TCP connections and requests,
 * and records per request whether its answer was written to the end (`completed`), so a
 * test can assert that the gateway closed the upstream connection and that the upstream
 * did not run to completion after the caller left.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { gzipSync } from 'node:zlib';

export const FAULT_MODES = [
  'ok',
  'reset-before-headers',
  'reset-mid-body',
  'status-500',
  'status-429',
  'no-headers',
  'stall-after-headers',
  'drip',
  'invalid-json',
  'wrong-shape',
  'html',
  'gzip',
  'huge-body',
  'huge-sse-line',
  'no-done',
  'not-sse',
  'reset-on-reuse',
  'slow',
] as const;
export type FaultMode = (typeof FAULT_MODES)[number];

export interface FaultOptions {
  /** `drip`: milliseconds between bytes (default 1000). */
  dripIntervalMs?: number;
  /** `huge-body`: bytes of the JSON body (default 100 MB). */
  hugeBodyBytes?: number;
  /** `huge-sse-line`: bytes of the one SSE line (default 600 MiB). */
  hugeLineBytes?: number;
  /** `slow`: milliseconds before a normal answer is sent (default 5000). */
  slowMs?: number;
  /** `status-429`: value of `retry-after` in seconds (default 1). */
  retryAfterSeconds?: number;
}

export interface FaultRequest {
  seq: number;
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  mode: FaultMode;
  stream: boolean;
  /** The answer was written to its end (false when the connection closed first, or never). */
  completed: boolean;
  /** Settles when the answer is finished or its connection is gone; `true` if finished. */
  done: Promise<boolean>;
  /** Settles when the TCP connection that carried this request closes. */
  connectionClosed: Promise<void>;
}

export interface FaultyUpstream {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** A URL on 127.0.0.1 where connecting is refused. */
  refusedUrl: string;
  requests: FaultRequest[];
  /** TCP connections currently open. */
  openConnections(): number;
  /** TCP connections accepted since start or the last reset. */
  connectionCount(): number;
  setMode(mode: FaultMode): void;
  /** The next `times` requests get `mode`, whatever they ask for. */
  failNext(mode: FaultMode, times?: number): void;
  configure(options: FaultOptions): void;
  /** Resolves once no TCP connection is open; rejects after `withinMs`. */
  allClosed(withinMs?: number): Promise<void>;
  /** Resolves once the connection that carried `request` is closed; rejects after `withinMs`. */
  connectionClosedWithin(request: FaultRequest, withinMs?: number): Promise<void>;
  /** Forget requests, counters, options; mode back to `ok`. Open connections stay. */
  reset(): void;
  close(): Promise<void>;
}

const CHUNK = 64 * 1024;
const DEFAULTS: Required<FaultOptions> = {
  dripIntervalMs: 1000,
  hugeBodyBytes: 100 * 1000 * 1000,
  hugeLineBytes: 600 * 1024 * 1024,
  slowMs: 5000,
  retryAfterSeconds: 1,
};

export function completionBody(model: string, content = 'ok'): string {
  return JSON.stringify({
    id: 'chatcmpl-fault',
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop', logprobs: null }],
    usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
  });
}

/** An OpenAI embeddings answer, for requests to `/embeddings`. */
function embeddingsBody(model: string): string {
  return JSON.stringify({
    object: 'list',
    data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }],
    model,
    usage: { prompt_tokens: 1, total_tokens: 1 },
  });
}

function chunk(model: string, delta: Record<string, unknown>, finish: string | null): string {
  const payload = {
    id: 'chatcmpl-fault',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(payload)}\n\n`;
}

export function streamBody(model: string, complete = true): string {
  const head = chunk(model, { role: 'assistant', content: '' }, null) + chunk(model, { content: 'ok' }, null);
  return complete ? `${head}${chunk(model, {}, 'stop')}data: [DONE]\n\n` : head;
}

function modeOf(req: IncomingMessage, json: Record<string, unknown> | undefined, fallback: FaultMode): FaultMode {
  const pick = (value: unknown): FaultMode | undefined => {
    const name = typeof value === 'string' && value.startsWith('fault-') ? value.slice(6) : value;
    return (FAULT_MODES as readonly unknown[]).includes(name) ? (name as FaultMode) : undefined;
  };
  return (
    pick(req.headers['x-fault-mode']) ??
    (typeof json?.model === 'string' && json.model.startsWith('fault-') ? pick(json.model) : undefined) ??
    (req.url ?? '')
      .split('?')[0]!
      .split('/')
      .map((s) => (s.startsWith('fault-') ? pick(s) : undefined))
      .find(Boolean) ??
    fallback
  );
}

/** Write `total` bytes made by `make(size)` with backpressure; stops when the socket goes. */
async function pump(res: ServerResponse, total: number, make: (size: number) => Buffer): Promise<boolean> {
  let sent = 0;
  while (sent < total) {
    if (res.destroyed || res.socket?.destroyed) return false;
    const size = Math.min(CHUNK, total - sent);
    sent += size;
    if (!res.write(make(size))) {
      const drained = await new Promise<boolean>((resolve) => {
        const onDrain = () => {
          res.off('close', onClose);
          resolve(true);
        };
        const onClose = () => {
          res.off('drain', onDrain);
          resolve(false);
        };
        res.once('drain', onDrain);
        res.once('close', onClose);
      });
      if (!drained) return false;
    }
  }
  return true;
}

const filler = Buffer.alloc(CHUNK, 'a');

export async function startFaultyUpstream(initial: FaultOptions = {}): Promise<FaultyUpstream> {
  let mode: FaultMode = 'ok';
  const queued: FaultMode[] = [];
  let options: Required<FaultOptions> = { ...DEFAULTS, ...initial };
  const requests: FaultRequest[] = [];
  const sockets = new Set<Socket>();
  const servedOn = new WeakMap<Socket, number>();
  const closedOf = new WeakMap<Socket, Promise<void>>();
  let accepted = 0;

  async function answer(rec: FaultRequest, req: IncomingMessage, res: ServerResponse, model: string): Promise<boolean> {
    const socket = req.socket;
    const json = { 'content-type': 'application/json' };
    const sse = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };
    const normal = () => (rec.stream ? streamBody(model) : (req.url ?? '').includes('/embeddings') ? embeddingsBody(model) : completionBody(model));
    switch (rec.mode) {
      case 'ok':
        res.writeHead(200, rec.stream ? sse : json).end(normal());
        return true;
      case 'slow':
        await new Promise((r) => setTimeout(r, options.slowMs));
        if (socket.destroyed) return false;
        res.writeHead(200, rec.stream ? sse : json).end(normal());
        return true;
      case 'reset-on-reuse':
        if ((servedOn.get(socket) ?? 0) > 1) {
          socket.resetAndDestroy();
          return false;
        }
        res.writeHead(200, rec.stream ? sse : json).end(normal());
        return true;
      case 'reset-before-headers':
        socket.resetAndDestroy();
        return false;
      case 'reset-mid-body': {
        const body = normal();
        res.writeHead(200, { ...(rec.stream ? sse : json), 'content-length': String(Buffer.byteLength(body)) });
        res.write(body.slice(0, Math.floor(body.length / 2)));
        await new Promise((r) => setTimeout(r, 50));
        socket.resetAndDestroy();
        return false;
      }
      case 'status-500':
        res.writeHead(500, json).end(JSON.stringify({ error: { message: 'The server had an error.', type: 'server_error', param: null, code: null } }));
        return true;
      case 'status-429':
        res
          .writeHead(429, { ...json, 'retry-after': String(options.retryAfterSeconds) })
          .end(JSON.stringify({ error: { message: 'Rate limit reached.', type: 'requests', param: null, code: 'rate_limit_exceeded' } }));
        return true;
      case 'no-headers':
        return false; // holds the connection until the client leaves
      case 'stall-after-headers':
        res.writeHead(200, rec.stream ? sse : json);
        res.flushHeaders();
        return false;
      case 'drip': {
        const body = Buffer.from(normal());
        res.writeHead(200, rec.stream ? sse : json);
        res.flushHeaders();
        for (let i = 0; i < body.length; i++) {
          if (socket.destroyed) return false;
          res.write(body.subarray(i, i + 1));
          await new Promise((r) => setTimeout(r, options.dripIntervalMs));
        }
        res.end();
        return true;
      }
      case 'invalid-json':
        res.writeHead(200, rec.stream ? sse : json).end(rec.stream ? 'data: {"choices": [\n\n' : '{"id": "chatcmpl-fault", "choices": [');
        return true;
      case 'wrong-shape':
        // Valid JSON that no translation can read: `choices` and `data` are not lists.
        res.writeHead(200, json).end('{"id": "fault", "object": "chat.completion", "choices": {"0": "no"}, "data": "none"}');
        return true;
      case 'html':
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body><h1>502 Bad Gateway</h1></body></html>');
        return true;
      case 'gzip':
        res.writeHead(200, { ...(rec.stream ? sse : json), 'content-encoding': 'gzip' }).end(gzipSync(normal()));
        return true;
      case 'not-sse':
        res.writeHead(200, json).end(completionBody(model));
        return true;
      case 'huge-body': {
        // A valid JSON object: a long string field, then the completion's fields.
        const head = Buffer.from('{"padding":"');
        const tail = Buffer.from(`",${completionBody(model).slice(1)}`);
        const fill = Math.max(0, options.hugeBodyBytes - head.length - tail.length);
        res.writeHead(200, { ...json, 'content-length': String(head.length + fill + tail.length) });
        res.write(head);
        if (!(await pump(res, fill, (n) => (n === CHUNK ? filler : filler.subarray(0, n))))) return false;
        res.end(tail);
        return true;
      }
      case 'huge-sse-line': {
        res.writeHead(200, sse);
        res.write('data: {"padding":"');
        if (!(await pump(res, options.hugeLineBytes, (n) => (n === CHUNK ? filler : filler.subarray(0, n))))) return false;
        res.end(`"}\n\n${streamBody(model)}`);
        return true;
      }
      case 'no-done':
        res.writeHead(200, sse).end(streamBody(model, false));
        return true;
    }
  }

  const server: Server = createServer((req, res) => {
    servedOn.set(req.socket, (servedOn.get(req.socket) ?? 0) + 1);
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts);
      let json: Record<string, unknown> | undefined;
      try {
        const parsed: unknown = JSON.parse(body.toString('utf8'));
        if (parsed && typeof parsed === 'object') json = parsed as Record<string, unknown>;
      } catch {
        /* not JSON */
      }
      let settle!: (finished: boolean) => void;
      const rec: FaultRequest = {
        seq: requests.length + 1,
        method: req.method ?? 'GET',
        path: (req.url ?? '/').split('?')[0]!,
        headers: req.headers,
        body,
        mode: queued.shift() ?? modeOf(req, json, mode),
        stream: json?.stream === true,
        completed: false,
        done: new Promise<boolean>((r) => (settle = r)),
        connectionClosed: closedOf.get(req.socket) ?? Promise.resolve(),
      };
      requests.push(rec);
      res.once('close', () => settle(rec.completed));
      const model = typeof json?.model === 'string' ? json.model : 'fault-model';
      answer(rec, req, res, model)
        .then((finished) => {
          if (!finished) return;
          if (res.writableFinished) rec.completed = true;
          else res.once('finish', () => (rec.completed = true));
        })
        .catch(() => res.destroy());
    });
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', (socket: Socket) => {
    accepted++;
    sockets.add(socket);
    closedOf.set(
      socket,
      new Promise<void>((r) =>
        socket.once('close', () => {
          sockets.delete(socket);
          r();
        }),
      ),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;

  // Port 1 (tcpmux): nothing listens there, and no test server is given it (port 0 binds come
  // from the ephemeral range). A port bound and released instead was once taken by another
  // file's server in a full run, which answered for the "refused" provider.
  const refusedPort = 1;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    refusedUrl: `http://127.0.0.1:${refusedPort}`,
    requests,
    openConnections: () => sockets.size,
    connectionCount: () => accepted,
    setMode: (m) => {
      mode = m;
    },
    failNext: (m, times = 1) => {
      for (let i = 0; i < times; i++) queued.push(m);
    },
    configure: (o) => {
      options = { ...options, ...o };
    },
    async allClosed(withinMs = 3000) {
      const deadline = Date.now() + withinMs;
      while (sockets.size > 0) {
        if (Date.now() > deadline) throw new Error(`${sockets.size} upstream connection(s) still open after ${withinMs} ms`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    connectionClosedWithin(request, withinMs = 3000) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`upstream connection of request ${request.seq} still open after ${withinMs} ms`)), withinMs);
      });
      return Promise.race([request.connectionClosed, late]).finally(() => clearTimeout(timer));
    },
    reset() {
      mode = 'ok';
      queued.length = 0;
      options = { ...DEFAULTS, ...initial };
      requests.length = 0;
      accepted = 0;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
