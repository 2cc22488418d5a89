import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { GatewayError } from '../../functions/shared/errors';
import { createUpstreamClient, FREE_SOCKET_TIMEOUT_MS, readBody, type UpstreamClient } from '../../functions/shared/net/http-client';

/**
 * The body phase of the outbound client: idle bound, failures as GatewayErrors, a request
 * written once (no silent resend on a reused socket), stale pooled sockets, and compressed
 * answers. A local server on 127.0.0.1 records every request and connection.
 */
type Handler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

let server: http.Server;
let base: string;
let handler: Handler;
const seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; socket: Socket }> = [];
const served = new WeakMap<Socket, number>();
const connections: Array<{ socket: Socket; closed: Promise<void> }> = [];
const clients: UpstreamClient[] = [];
const TRUST = ['127.0.0.1'];

function client(): UpstreamClient {
  const c = createUpstreamClient();
  clients.push(c);
  return c;
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    served.set(req.socket, (served.get(req.socket) ?? 0) + 1);
    req.resume();
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, socket: req.socket });
      void Promise.resolve(handler(req, res)).catch(() => res.destroy());
    });
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', (socket: Socket) => {
    connections.push({ socket, closed: new Promise<void>((r) => socket.once('close', () => r())) });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(() => {
  vi.useRealTimers();
  while (clients.length) clients.pop()!.destroy();
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const JSON_BODY = '{"ok":true,"text":"héllo"}';
const ok: Handler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON_BODY);
};

describe('body phase', () => {
  it('silence between body bytes past idleTimeoutMs fails the body with 504 upstream_idle_timeout and closes the connection', async () => {
    handler = (_req, res) => {
      res.writeHead(200);
      res.write('a');
    };
    const before = connections.length;
    const started = Date.now();
    const res = await client().sendUpstream({ url: `${base}/idle`, method: 'GET', headers: {}, trustedHosts: TRUST, idleTimeoutMs: 300 });
    const err = await readBody(res.body, 1024).catch((e) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ status: 504, type: 'timeout_error', code: 'upstream_idle_timeout' });
    expect(Date.now() - started).toBeLessThan(3_000);
    await connections[before]!.closed;
  });

  it('bytes that keep coming re-arm the idle bound: a body dripping faster than it completes', async () => {
    handler = async (_req, res) => {
      res.writeHead(200);
      for (let i = 0; i < 8; i++) {
        res.write('x');
        await new Promise((r) => setTimeout(r, 100));
      }
      res.end();
    };
    const res = await client().sendUpstream({ url: `${base}/drip`, method: 'GET', headers: {}, trustedHosts: TRUST, idleTimeoutMs: 400 });
    expect((await readBody(res.body, 1024)).toString()).toBe('xxxxxxxx');
  });

  it('a reset mid-body fails the body with 502 upstream_response_ended, for readBody and for a raw reader', async () => {
    handler = (req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('{"partial":');
      setTimeout(() => req.socket.resetAndDestroy(), 20);
    };
    const a = await client().sendUpstream({ url: `${base}/cut`, method: 'GET', headers: {}, trustedHosts: TRUST });
    const err = await readBody(a.body, 1024).catch((e) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ status: 502, type: 'upstream_error', code: 'upstream_response_ended' });

    const b = await client().sendUpstream({ url: `${base}/cut`, method: 'GET', headers: {}, trustedHosts: TRUST });
    const raw = await (async () => {
      for await (const _ of b.body) {
        /* drain */
      }
    })().catch((e) => e);
    expect(raw).toBeInstanceOf(GatewayError);
    expect(raw).toMatchObject({ status: 502, code: 'upstream_response_ended' });
  });
});

describe('a request is written once', () => {
  it('a reset of a reused keep-alive socket before the headers is a 502: the POST reaches the server once', async () => {
    // The first request on a connection is answered; any later one on the same connection is reset.
    handler = (req, res) => {
      if ((served.get(req.socket) ?? 0) > 1) req.socket.resetAndDestroy();
      else ok(req, res);
    };
    const c = client();
    const first = await c.sendUpstream({ url: `${base}/once`, method: 'POST', headers: {}, body: '{"n":1}', trustedHosts: TRUST });
    await readBody(first.body, 1024);
    const posts = () => seen.filter((s) => s.url === '/once').length;
    expect(posts()).toBe(1);

    const err = await c.sendUpstream({ url: `${base}/once`, method: 'POST', headers: {}, body: '{"n":2}', trustedHosts: TRUST }).catch((e) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ status: 502, code: 'upstream_unreachable' });
    expect(posts()).toBe(2); // the second POST arrived once, on the reused socket, and was not sent again
    expect(seen.at(-1)!.socket).toBe(seen.at(-2)!.socket);
  });

  it('a pooled socket idle longer than FREE_SOCKET_TIMEOUT_MS is not reused, even when its timer could not run (frozen sandbox)', async () => {
    handler = ok;
    const c = client();
    const first = await c.sendUpstream({ url: `${base}/fresh`, method: 'GET', headers: {}, trustedHosts: TRUST });
    await readBody(first.body, 1024);
    const again = await c.sendUpstream({ url: `${base}/fresh`, method: 'GET', headers: {}, trustedHosts: TRUST });
    await readBody(again.body, 1024);
    expect(seen.at(-1)!.socket).toBe(seen.at(-2)!.socket); // reused while fresh

    // Only the wall clock moves (as after a thaw); the socket's idle timer has not fired.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + FREE_SOCKET_TIMEOUT_MS + 1_000);
    const later = await c.sendUpstream({ url: `${base}/fresh`, method: 'GET', headers: {}, trustedHosts: TRUST });
    await readBody(later.body, 1024);
    expect(seen.at(-1)!.socket).not.toBe(seen.at(-2)!.socket);
  });

  it('a stale pooled socket behind a fresh one is not handed out either (the pool is freed in order: stale ones first)', async () => {
    // Each answer waits for the test to release it, so two requests hold two connections.
    const held: Array<() => void> = [];
    handler = (req, res) => {
      held.push(() => ok(req, res));
    };
    const c = client();
    vi.useFakeTimers({ toFake: ['Date'] });
    const started = Date.now();
    const a = c.sendUpstream({ url: `${base}/pool`, method: 'GET', headers: {}, trustedHosts: TRUST });
    const b = c.sendUpstream({ url: `${base}/pool`, method: 'GET', headers: {}, trustedHosts: TRUST });
    while (held.length < 2) await new Promise((r) => setTimeout(r, 5));
    const [socketA, socketB] = seen.slice(-2).map((s) => s.socket);
    expect(socketA).not.toBe(socketB);
    // A's connection goes back to the pool first; B's two thirds of the idle limit later.
    held.shift()!();
    await readBody((await a).body, 1024);
    vi.setSystemTime(started + (FREE_SOCKET_TIMEOUT_MS * 2) / 3);
    held.shift()!();
    await readBody((await b).body, 1024);
    await new Promise((r) => setTimeout(r, 20));
    // Now A's has idled past the limit (its timer did not run: a thawed sandbox), B's has not.
    vi.setSystemTime(started + FREE_SOCKET_TIMEOUT_MS + 100);
    handler = ok;
    const [c1, c2] = await Promise.all([
      c.sendUpstream({ url: `${base}/pool`, method: 'GET', headers: {}, trustedHosts: TRUST }),
      c.sendUpstream({ url: `${base}/pool`, method: 'GET', headers: {}, trustedHosts: TRUST }),
    ]);
    await Promise.all([readBody(c1.body, 1024), readBody(c2.body, 1024)]);
    const used = seen.slice(-2).map((s) => s.socket);
    expect(used).toContain(socketB);
    expect(used).not.toContain(socketA);
  });

  it('a pooled socket is closed by the client after FREE_SOCKET_TIMEOUT_MS of idleness', async () => {
    handler = ok;
    const before = connections.length;
    const res = await client().sendUpstream({ url: `${base}/idle-pool`, method: 'GET', headers: {}, trustedHosts: TRUST });
    await readBody(res.body, 1024);
    const started = Date.now();
    await connections[before]!.closed;
    expect(Date.now() - started).toBeLessThan(FREE_SOCKET_TIMEOUT_MS + 3_000);
  });
});

describe('keep-alive hint', () => {
  it("a server's shorter `Keep-Alive: timeout=` is honoured: the pooled socket closes before it (Node's agent, kept)", async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'keep-alive': 'timeout=2' });
      res.end(JSON_BODY);
    };
    const before = connections.length;
    const res = await client().sendUpstream({ url: `${base}/hint`, method: 'GET', headers: {}, trustedHosts: TRUST });
    await readBody(res.body, 1024);
    const started = Date.now();
    await connections[before]!.closed;
    // The hint less a second (1 s), well before FREE_SOCKET_TIMEOUT_MS.
    expect(Date.now() - started).toBeLessThan(FREE_SOCKET_TIMEOUT_MS - 500);
  });
});

describe('compressed answers', () => {
  it('asks for identity unless the request names an encoding', async () => {
    handler = ok;
    const res = await client().sendUpstream({ url: `${base}/enc`, method: 'GET', headers: {}, trustedHosts: TRUST });
    await readBody(res.body, 1024);
    expect(seen.at(-1)!.headers['accept-encoding']).toBe('identity');
    const own = await client().sendUpstream({ url: `${base}/enc`, method: 'GET', headers: { 'Accept-Encoding': 'gzip' }, trustedHosts: TRUST });
    await readBody(own.body, 1024);
    expect(seen.at(-1)!.headers['accept-encoding']).toBe('gzip');
  });

  for (const [encoding, encode] of [
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ] as const) {
    it(`decodes a ${encoding} body sent anyway, and drops content-encoding and content-length`, async () => {
      const bytes = encode(Buffer.from(JSON_BODY));
      handler = (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': encoding, 'content-length': String(bytes.length) });
        res.end(bytes);
      };
      const res = await client().sendUpstream({ url: `${base}/${encoding}`, method: 'GET', headers: {}, trustedHosts: TRUST });
      expect(res.headers['content-encoding']).toBeUndefined();
      expect(res.headers['content-length']).toBeUndefined();
      expect((await readBody(res.body, 1024)).toString()).toBe(JSON_BODY);
    });
  }

  it('a body that does not decode is a 502 invalid_upstream_response', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip' });
      res.end('this is not gzip at all');
    };
    const res = await client().sendUpstream({ url: `${base}/bad-gzip`, method: 'GET', headers: {}, trustedHosts: TRUST });
    const err = await readBody(res.body, 1024).catch((e) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ status: 502, code: 'invalid_upstream_response' });
    expect(err.message).toContain('gzip');
  });

  it('the size limit applies to the decoded bytes: a decompression bomb is refused early and its connection closed', async () => {
    const bomb = gzipSync(Buffer.alloc(50 * 1024 * 1024)); // ~50 KB on the wire, 50 MB decoded
    handler = (_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-length': String(bomb.length) });
      res.end(bomb);
    };
    const before = connections.length;
    const res = await client().sendUpstream({ url: `${base}/bomb`, method: 'GET', headers: {}, trustedHosts: TRUST });
    const err = await readBody(res.body, 1024 * 1024).catch((e) => e);
    expect(err).toMatchObject({ status: 502, code: 'upstream_response_too_large' });
    await connections[before]!.closed;
  });
});
