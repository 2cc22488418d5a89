import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import type { Server } from 'node:http';
import { createHttpHandler } from '../../functions/shared/http/lambda-entry';
import { badRequest } from '../../functions/shared/errors';
import { SseWriter, SSE_HEADERS } from '../../functions/shared/http/sse';
import { closeServer, listen } from '../../infra/local/server';
import type { StreamingHandler } from '../../infra/local/awslambda-shim';
import type { LocalGateway } from '../../infra/local/server';
import { call, errorOf, startTestGateway } from '../support/gateway';

let gw: LocalGateway;

beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.stop();
});

describe('error shape and status codes', () => {
  it('401 without a key, with the OpenAI error shape', async () => {
    const res = await call(gw, 'GET', '/v1/workspaces', { key: null });
    expect(res.status).toBe(401);
    expect(errorOf(res)).toMatchObject({ type: 'authentication_error', code: 'missing_api_key', param: null });
  });

  it('401 for an unknown key', async () => {
    const res = await call(gw, 'GET', '/v1/workspaces', { key: 'gwk_not-a-real-key' });
    expect(res.status).toBe(401);
    expect(errorOf(res).type).toBe('authentication_error');
  });

  it('404 for an unknown route (everything else under /v1 is the generic proxy)', async () => {
    for (const path of ['/v1/workspaces/x/y/z', '/v1/policies/rate-limits/a/b/c/d', '/elsewhere', '/v2/models']) {
      const res = await call(gw, 'GET', path);
      expect(res.status, path).toBe(404);
      expect(errorOf(res).type).toBe('not_found_error');
    }
  });

  it('405 with an Allow header for a wrong method', async () => {
    const res = await call(gw, 'DELETE', '/v1/workspaces');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST, GET');
    expect(errorOf(res).code).toBe('method_not_allowed');
  });

  it('400 for malformed JSON', async () => {
    const res = await call(gw, 'POST', '/v1/workspaces', { body: '{"name": ' });
    expect(res.status).toBe(400);
    expect(errorOf(res)).toMatchObject({ type: 'invalid_request_error', code: 'invalid_json' });
  });

  it('400 naming the field and the rule for a wrong type', async () => {
    const res = await call(gw, 'POST', '/v1/workspaces', { body: { name: 42 } });
    expect(res.status).toBe(400);
    const err = errorOf(res);
    expect(err.param).toBe('name');
    expect(err.message).toMatch(/`name`.*expected string/);
  });

  it('400 naming unknown fields', async () => {
    const res = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'ok', colour: 'red' } });
    expect(res.status).toBe(400);
    expect(errorOf(res).message).toContain('colour');
  });

  it('413 for a body over the 10 MB API Gateway limit, and the runtime keeps serving', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(10 * 1024 * 1024) });
    // The runtime reads the rest of the body and drops it before closing: the client always gets the answer.
    const res = await call(gw, 'POST', '/v1/workspaces', { body: big });
    expect(res.status).toBe(413);
    expect(errorOf(res)).toMatchObject({ type: 'invalid_request_error', code: 'payload_too_large' });
    const after = await call(gw, 'GET', '/v1/workspaces');
    expect(after.status).toBe(200);
    expect(after.body.object).toBe('list');
  });

  it('400 for an out-of-range query parameter', async () => {
    const res = await call(gw, 'GET', '/v1/workspaces?limit=1000');
    expect(res.status).toBe(400);
    expect(errorOf(res)).toMatchObject({ param: 'limit' });
  });
});

describe('trace ids', () => {
  it('echoes a caller trace id on success and on error', async () => {
    const ok = await call(gw, 'GET', '/v1/workspaces', { headers: { 'x-gateway-trace-id': 'trace-abc.1' } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-gateway-trace-id')).toBe('trace-abc.1');
    const err = await call(gw, 'GET', '/v1/nope', { key: null, headers: { 'x-gateway-trace-id': 'trace-err' } });
    expect(err.headers.get('x-gateway-trace-id')).toBe('trace-err');
  });

  it('generates a unique trace id when none (or a malformed one) is sent', async () => {
    const a = await call(gw, 'GET', '/v1/workspaces');
    const b = await call(gw, 'GET', '/v1/workspaces', { headers: { 'x-gateway-trace-id': 'bad id with spaces' } });
    const ida = a.headers.get('x-gateway-trace-id');
    const idb = b.headers.get('x-gateway-trace-id');
    // The id of the request's log record (a record is found by it without a trace index).
    expect(ida).toMatch(/^log_[0-9a-z]{26}$/);
    expect(idb).toMatch(/^log_[0-9a-z]{26}$/);
    expect(ida).not.toBe(idb);
  });
});

describe('workspaces (admin)', () => {
  it('creates, lists with a cursor and reads workspaces of the organisation', async () => {
    const created = [];
    for (const name of ['Team One', 'Team Two', 'Team Three']) {
      const res = await call(gw, 'POST', '/v1/workspaces', { body: { name } });
      expect(res.status).toBe(200);
      created.push(res.body);
    }
    expect(created[0]).toMatchObject({ object: 'workspace', slug: 'team-one', organisation_id: gw.organisationId });
    const first = await call(gw, 'GET', '/v1/workspaces?order=asc&limit=2');
    expect(first.body).toMatchObject({ object: 'list', has_more: true });
    expect(first.body.data).toHaveLength(2);
    const rest = await call(gw, 'GET', `/v1/workspaces?order=asc&limit=10&after=${first.body.last_id}`);
    const all = [...first.body.data, ...rest.body.data].map((w: { id: string }) => w.id);
    expect(all).toEqual([gw.workspaceId, ...created.map((w) => w.id)]);
    expect(rest.body.has_more).toBe(false);
    const one = await call(gw, 'GET', `/v1/workspaces/${created[1].slug}`);
    expect(one.body.id).toBe(created[1].id);
  });

  it('409 on a duplicate slug', async () => {
    await call(gw, 'POST', '/v1/workspaces', { body: { name: 'Dup' } });
    const res = await call(gw, 'POST', '/v1/workspaces', { body: { name: 'dup' } });
    expect(res.status).toBe(409);
    expect(errorOf(res).type).toBe('conflict_error');
  });
});

describe('response streaming through the local Lambda shim', () => {
  let server: Server;
  let url: string;
  let firstChunkSeen: () => void;
  const middlewareCalls: string[] = [];
  const seen = new Promise<void>((r) => (firstChunkSeen = r));

  beforeAll(async () => {
    const handler = createHttpHandler([
      {
        method: 'GET',
        path: '/v1/stream',
        access: 'gateway',
        handler: async () => {
          const sse = new SseWriter();
          void (async () => {
            sse.send({ n: 1 });
            // The handler cannot finish until the caller has received the first chunk:
            // if anything buffered the body, this test would time out.
            await seen;
            sse.send({ n: 2 });
            sse.done();
          })();
          return { statusCode: 200, headers: { ...SSE_HEADERS }, body: sse.stream };
        },
      },
      {
        method: 'GET',
        path: '/v1/boom',
        access: 'gateway',
        handler: async () => {
          throw new Error('secret internals at /srv/app.ts:12');
        },
      },
      {
        method: 'GET',
        path: '/v1/guarded/{id}',
        access: 'gateway',
        use: [
          async (req, next) => {
            middlewareCalls.push(`outer:${req.params.id}:${req.auth.workspaceId ? 'authenticated' : 'anonymous'}`);
            const res = await next();
            return { ...res, headers: { ...res.headers, 'x-outer': 'seen' } };
          },
          async (req, next) => {
            middlewareCalls.push('inner');
            if (req.params.id === 'refused') throw badRequest('Refused by the route middleware.', 'id', 'refused');
            return next();
          },
        ],
        handler: async (req) => ({ statusCode: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: req.params.id }) }),
      },
      {
        method: 'GET',
        path: '/v1/binary',
        access: 'gateway',
        handler: async () => {
          const body = new PassThrough();
          body.end(Buffer.from([0, 1, 2, 255]));
          return { statusCode: 201, headers: { 'content-type': 'application/octet-stream' }, body };
        },
      },
    ]) as unknown as StreamingHandler;
    ({ server, url } = await listen(() => handler));
  });
  afterAll(async () => {
    await closeServer(server);
  });

  it('delivers the first chunk before the handler has finished', async () => {
    const res = await fetch(`${url}/v1/stream`, { headers: { 'x-gateway-api-key': gw.adminKey } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('"n":1')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    expect(text).toBe('data: {"n":1}\n\n');
    firstChunkSeen();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    expect(text).toBe('data: {"n":1}\n\ndata: {"n":2}\n\ndata: [DONE]\n\n');
  });

  it('turns an unhandled exception into a 500 without internals', async () => {
    const res = await fetch(`${url}/v1/boom`, { headers: { 'x-gateway-api-key': gw.adminKey } });
    const text = await res.text();
    expect(res.status).toBe(500);
    expect(JSON.parse(text).error.type).toBe('server_error');
    expect(text).not.toContain('secret internals');
    expect(text).not.toContain('.ts');
    expect(res.headers.get('x-gateway-trace-id')).toBeTruthy();
  });

  it("runs a route's middleware after authentication, outermost first, around its handler", async () => {
    const anonymous = await fetch(`${url}/v1/guarded/abc`);
    expect(anonymous.status).toBe(401);
    expect(middlewareCalls).toEqual([]);

    const res = await fetch(`${url}/v1/guarded/abc`, { headers: { 'x-gateway-api-key': gw.adminKey } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: 'abc' });
    expect(res.headers.get('x-outer')).toBe('seen');
    expect(middlewareCalls).toEqual(['outer:abc:authenticated', 'inner']);
  });

  it('answers what a middleware throws with the error shape, without running the handler', async () => {
    middlewareCalls.length = 0;
    const res = await fetch(`${url}/v1/guarded/refused`, { headers: { 'x-gateway-api-key': gw.adminKey } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: unknown }).error).toMatchObject({ type: 'invalid_request_error', code: 'refused', param: 'id' });
    expect(res.headers.get('x-outer')).toBeNull();
    expect(middlewareCalls).toEqual(['outer:refused:authenticated', 'inner']);
  });

  it('passes binary bodies and the status through unchanged', async () => {
    const res = await fetch(`${url}/v1/binary`, { headers: { 'x-gateway-api-key': gw.adminKey } });
    expect(res.status).toBe(201);
    expect([...new Uint8Array(await res.arrayBuffer())]).toEqual([0, 1, 2, 255]);
  });
});
