import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { GatewayError } from '../../functions/shared/errors';
import { AbortError, createUpstreamClient, readBody, sendUpstream, type UpstreamClient } from '../../functions/shared/net/http-client';
import { createGuardedLookup, type Resolver } from '../../functions/shared/net/ssrf';

/**
 * A local upstream on 127.0.0.1. Every test installs its own handler; the server records
 * each request and each TCP connection (with a promise that settles when it closes), so
 * tests can prove what reached the server and that connections were torn down, without
 * asserting on durations.
 */
type Handler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void | Promise<void>;

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

let server: http.Server;
let port: number;
let base: string;
let handler: Handler;
const seen: Seen[] = [];
const connections: Array<{ socket: Socket; closed: Promise<void> }> = [];
let connectionWaiters: Array<(c: { closed: Promise<void> }) => void> = [];

/** Resolves with the next TCP connection the server accepts. */
function nextConnection(): Promise<{ closed: Promise<void> }> {
  return new Promise((resolve) => connectionWaiters.push(resolve));
}

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const clients: UpstreamClient[] = [];
function freshClient(resolve?: Resolver): UpstreamClient {
  const c = createUpstreamClient(resolve ? { resolve } : {});
  clients.push(c);
  return c;
}

const TRUST = ['127.0.0.1'];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      void Promise.resolve(handler(req, res, body)).catch(() => res.destroy());
    });
  });
  server.on('connection', (socket: Socket) => {
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    const entry = { socket, closed };
    connections.push(entry);
    const waiters = connectionWaiters;
    connectionWaiters = [];
    for (const w of waiters) w(entry);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

afterEach(() => {
  while (clients.length) clients.pop()!.destroy();
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const okHandler: Handler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true}');
};

describe('SSRF guard on the outbound client', () => {
  it('refuses 127.0.0.1 unless it is trusted; nothing reaches the server', async () => {
    handler = okHandler;
    const before = { requests: seen.length, connections: connections.length };
    for (const trustedHosts of [[], ['api.openai.com'], ['localhost']]) {
      const err = await sendUpstream({ url: `${base}/v1/chat`, method: 'GET', headers: {}, trustedHosts }).catch((e) => e);
      expect(err).toBeInstanceOf(GatewayError);
      expect(err).toMatchObject({ status: 400, type: 'invalid_request_error', code: 'blocked_custom_host' });
      expect(err.message).toContain("'127.0.0.1'");
    }
    const withParam = await sendUpstream({
      url: `http://2130706433:${port}/`,
      method: 'GET',
      headers: {},
      trustedHosts: [],
      param: 'x-gateway-custom-host',
    }).catch((e) => e);
    expect(withParam).toMatchObject({ status: 400, param: 'x-gateway-custom-host', code: 'blocked_custom_host' });
    expect(seen.length).toBe(before.requests);
    expect(connections.length).toBe(before.connections);

    const res = await sendUpstream({ url: `${base}/v1/chat`, method: 'GET', headers: {}, trustedHosts: TRUST });
    expect(res.status).toBe(200);
    expect((await readBody(res.body, 1024)).toString()).toBe('{"ok":true}');
  });

  it("refuses 'localhost' by name even when 127.0.0.1 is trusted", async () => {
    const err = await sendUpstream({ url: `http://localhost:${port}/`, method: 'GET', headers: {}, trustedHosts: TRUST }).catch((e) => e);
    expect(err).toMatchObject({ status: 400, code: 'blocked_custom_host' });
  });

  it('node:http with lookup: guardedLookup refuses a name that resolves to loopback (/etc/hosts)', async () => {
    handler = okHandler;
    const before = connections.length;
    const attempt = (trustedHosts: string[]) =>
      new Promise<{ status?: number; err?: unknown }>((resolve) => {
        const req = http.get({ hostname: 'localhost', port, path: '/dns', agent: false, lookup: createGuardedLookup({ trustedHosts }), family: 4 }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode }));
        });
        req.on('error', (err) => resolve({ err }));
      });
    const refused = await attempt(['api.openai.com', '127.0.0.1']);
    expect(refused.err).toBeInstanceOf(GatewayError);
    expect(refused.err).toMatchObject({ status: 400, code: 'blocked_custom_host' });
    expect((refused.err as Error).message).toMatch(/'localhost'.*resolves to 127\.0\.0\.1/);
    expect(connections.length).toBe(before);

    expect(await attempt(['localhost'])).toEqual({ status: 200 });
  });

  it('a host name resolving to a blocked address is refused by the agents (injected resolver)', async () => {
    handler = okHandler;
    const resolve: Resolver = async (hostname) => {
      if (hostname === 'llm.example.test') return [{ address: '127.0.0.1', family: 4 }];
      if (hostname === 'mixed.example.test')
        return [
          { address: '93.184.216.34', family: 4 },
          { address: '127.0.0.1', family: 4 },
        ];
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    };
    const client = freshClient(resolve);
    const before = { requests: seen.length, connections: connections.length };
    for (const host of ['llm.example.test', 'mixed.example.test']) {
      const err = await client
        .sendUpstream({
          url: `http://${host}:${port}/v1`,
          method: 'POST',
          headers: {},
          body: '{}',
          trustedHosts: ['api.openai.com', '127.0.0.1'],
          param: 'x-gateway-custom-host',
        })
        .catch((e) => e);
      expect(err).toBeInstanceOf(GatewayError);
      expect(err).toMatchObject({ status: 400, code: 'blocked_custom_host', param: 'x-gateway-custom-host' });
      expect(err.message).toContain(`'${host}'`);
      expect(err.message).toContain('127.0.0.1');
    }
    expect(seen.length).toBe(before.requests);
    expect(connections.length).toBe(before.connections);

    // Trusting the name itself admits it (through the unchecked agent).
    const ok = await client.sendUpstream({ url: `http://LLM.example.test:${port}/v1`, method: 'GET', headers: {}, trustedHosts: ['llm.example.test'] });
    expect(ok.status).toBe(200);
    await readBody(ok.body, 1024);

    // ... and that trust does not leak into the next request's guarded agent.
    const again = await client.sendUpstream({ url: `http://llm.example.test:${port}/v1`, method: 'GET', headers: {}, trustedHosts: [] }).catch((e) => e);
    expect(again).toMatchObject({ status: 400, code: 'blocked_custom_host' });

    // A name that does not resolve is a 502 naming the host.
    const missing = await client
      .sendUpstream({ url: `https://nowhere.example.test/v1?key=sk-secret`, method: 'GET', headers: {}, trustedHosts: [] })
      .catch((e) => e);
    expect(missing).toMatchObject({ status: 502, type: 'upstream_error', code: 'upstream_unreachable' });
    expect(missing.message).toContain("'nowhere.example.test'");
    expect(missing.message).toContain('ENOTFOUND');
    expect(missing.message).not.toContain('sk-secret');
  });
});

describe('sendUpstream', () => {
  it('streams status, headers and body: the first chunk arrives before the server ends', async () => {
    const clientGotChunk1 = deferred();
    handler = async (_req, res) => {
      res.writeHead(201, { 'content-type': 'text/event-stream', 'x-upstream': 'yes', 'set-cookie': ['a=1', 'b=2'] });
      res.write('data: one\n\n');
      await clientGotChunk1.promise; // the server cannot finish before the client saw chunk 1
      res.end('data: two\n\n');
    };
    const body = '{"msg":"héllo"}';
    const res = await sendUpstream({
      url: `${base}/v1/stream?x=1`,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test', 'Content-Length': '9999' },
      body,
      trustedHosts: TRUST,
    });
    expect(res.status).toBe(201);
    expect(res.headers['content-type']).toBe('text/event-stream');
    expect(res.headers['x-upstream']).toBe('yes');
    expect(res.headers['set-cookie']).toEqual(['a=1', 'b=2']);

    const it = res.body[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.done).toBe(false);
    expect(String(first.value)).toBe('data: one\n\n');
    expect((res.body as IncomingMessage).complete).toBe(false);
    clientGotChunk1.resolve();
    let rest = '';
    for (let next = await it.next(); !next.done; next = await it.next()) rest += String(next.value);
    expect(rest).toBe('data: two\n\n');

    const got = seen.at(-1)!;
    expect(got.method).toBe('POST');
    expect(got.url).toBe('/v1/stream?x=1');
    expect(got.headers['content-length']).toBe(String(Buffer.byteLength(body)));
    expect(got.headers.authorization).toBe('Bearer sk-test');
    expect(got.body.toString()).toBe(body);
  });

  it('sends Buffer bodies with their Content-Length and reuses keep-alive connections', async () => {
    handler = okHandler;
    const client = freshClient();
    const before = connections.length;
    for (let i = 0; i < 3; i++) {
      const payload = Buffer.from([0, 1, 2, 3, 4, i]);
      const res = await client.sendUpstream({ url: `${base}/buf`, method: 'PUT', headers: {}, body: payload, trustedHosts: TRUST });
      expect(res.status).toBe(200);
      await readBody(res.body, 1024);
      expect(seen.at(-1)!.headers['content-length']).toBe('6');
      expect(seen.at(-1)!.body.equals(payload)).toBe(true);
    }
    expect(connections.length - before).toBe(1);
  });

  it('returns a 302 to a private address as is; never follows it', async () => {
    handler = (req, res) => {
      if (req.url === '/redirect-metadata') res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
      else if (req.url === '/redirect-here') res.writeHead(307, { location: `${base}/followed` });
      else res.writeHead(200);
      res.end();
    };
    const a = await sendUpstream({ url: `${base}/redirect-metadata`, method: 'GET', headers: {}, trustedHosts: TRUST });
    expect(a.status).toBe(302);
    expect(a.headers.location).toBe('http://169.254.169.254/latest/meta-data/');
    await readBody(a.body, 1024);

    const b = await sendUpstream({ url: `${base}/redirect-here`, method: 'POST', headers: {}, body: 'x', trustedHosts: TRUST });
    expect(b.status).toBe(307);
    expect(b.headers.location).toBe(`${base}/followed`);
    await readBody(b.body, 1024);

    expect(seen.filter((s) => s.url === '/followed')).toEqual([]);
    expect(seen.filter((s) => s.url.startsWith('/redirect-')).length).toBe(2);
  });

  // Fake timers (setTimeout/clearTimeout only, sockets stay real) make the deadline a test
  // mechanic: it fires exactly when the test advances the clock, never by elapsed time.
  it('times out before the headers with a 408 and closes the connection', async () => {
    const arrived = deferred();
    handler = () => arrived.resolve(); // never answers
    const client = freshClient();
    const conn = nextConnection();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const pending = client.sendUpstream({ url: `${base}/slow`, method: 'GET', headers: {}, trustedHosts: TRUST, timeoutMs: 5_000 }).catch((e) => e);
      await arrived.promise;
      vi.advanceTimersByTime(5_000);
      const err = await pending;
      expect(err).toBeInstanceOf(GatewayError);
      expect(err).toMatchObject({ status: 408, type: 'timeout_error', code: 'request_timeout' });
      expect(err.message).toContain('5000 ms');
    } finally {
      vi.useRealTimers();
    }
    await (await conn).closed; // the server side sees the connection go away
  });

  it('the timeout covers the body too: past the deadline the body fails with the same 408 and the connection closes', async () => {
    handler = async (_req, res) => {
      res.writeHead(200);
      res.write('a');
      await new Promise(() => {}); // never ends on its own
    };
    const client = freshClient();
    const conn = nextConnection();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const res = await client.sendUpstream({ url: `${base}/slow-body`, method: 'GET', headers: {}, trustedHosts: TRUST, timeoutMs: 5_000 });
      const body = readBody(res.body, 1024).catch((e) => e);
      vi.advanceTimersByTime(4_999);
      expect(res.body.destroyed).toBe(false);
      vi.advanceTimersByTime(1);
      const err = await body;
      expect(err).toBeInstanceOf(GatewayError);
      expect(err).toMatchObject({ status: 408, type: 'timeout_error', code: 'request_timeout' });
    } finally {
      vi.useRealTimers();
    }
    await (await conn).closed;
  });

  it('an abort signal destroys the request and closes the server-side connection', async () => {
    const arrived = deferred();
    handler = () => arrived.resolve();
    const client = freshClient();
    const conn = nextConnection();
    const ac = new AbortController();
    const pending = client.sendUpstream({ url: `${base}/abort`, method: 'GET', headers: {}, trustedHosts: TRUST, signal: ac.signal });
    await arrived.promise;
    ac.abort(new Error('caller went away'));
    const err = await pending.catch((e) => e);
    expect(err).toBeInstanceOf(AbortError);
    expect(err).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' });
    expect(err.cause).toEqual(new Error('caller went away'));
    await (await conn).closed;
  });

  it('an abort after the headers destroys the body stream and the connection', async () => {
    const gotChunk = deferred();
    handler = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
      await new Promise(() => {}); // never ends on its own
    };
    const client = freshClient();
    const conn = nextConnection();
    const ac = new AbortController();
    const res = await client.sendUpstream({ url: `${base}/abort-body`, method: 'GET', headers: {}, trustedHosts: TRUST, signal: ac.signal });
    res.body.once('data', () => gotChunk.resolve());
    const body = readBody(res.body, 1024);
    await gotChunk.promise;
    ac.abort();
    const err = await body.catch((e) => e);
    expect(err).toBeInstanceOf(AbortError);
    await (await conn).closed;
  });

  it('an already aborted signal sends nothing', async () => {
    const before = connections.length;
    const err = await sendUpstream({ url: `${base}/never`, method: 'GET', headers: {}, trustedHosts: TRUST, signal: AbortSignal.abort() }).catch((e) => e);
    expect(err).toBeInstanceOf(AbortError);
    expect(connections.length).toBe(before);
  });

  it('connection refused is a 502 naming the host, never headers or the path', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const err = await sendUpstream({
      url: `http://127.0.0.1:${deadPort}/v1/secret-path?api_key=sk-in-query`,
      method: 'POST',
      headers: { authorization: 'Bearer sk-in-header' },
      body: '{}',
      trustedHosts: TRUST,
    }).catch((e) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ status: 502, type: 'upstream_error', code: 'upstream_unreachable' });
    expect(err.message).toContain(`'127.0.0.1:${deadPort}'`);
    expect(err.message).toContain('ECONNREFUSED');
    for (const secret of ['sk-in-query', 'sk-in-header', 'secret-path']) expect(err.message).not.toContain(secret);
  });

  it('a connection reset before the headers is a 502', async () => {
    handler = (req) => {
      req.socket.destroy();
    };
    const err = await freshClient()
      .sendUpstream({ url: `${base}/reset`, method: 'GET', headers: {}, trustedHosts: TRUST })
      .catch((e) => e);
    expect(err).toMatchObject({ status: 502, type: 'upstream_error' });
    expect(err.message).toContain(`'127.0.0.1:${port}'`);
  });
});

describe('readBody', () => {
  const payload = 'x'.repeat(100);
  for (const chunked of [false, true]) {
    it(`buffers within the limit and refuses beyond it (${chunked ? 'chunked' : 'content-length'})`, async () => {
      handler = (_req, res) => {
        if (chunked) {
          res.writeHead(200);
          res.write(payload.slice(0, 50));
          res.end(payload.slice(50));
        } else {
          res.writeHead(200, { 'content-length': String(payload.length) });
          res.end(payload);
        }
      };
      const ok = await sendUpstream({ url: `${base}/body`, method: 'GET', headers: {}, trustedHosts: TRUST });
      expect((await readBody(ok.body, 100)).toString()).toBe(payload);

      const big = await sendUpstream({ url: `${base}/body`, method: 'GET', headers: {}, trustedHosts: TRUST });
      const err = await readBody(big.body, 10).catch((e) => e);
      expect(err).toBeInstanceOf(GatewayError);
      expect(err).toMatchObject({ status: 502, code: 'upstream_response_too_large' });
      expect(big.body.destroyed).toBe(true);
    });
  }
});
