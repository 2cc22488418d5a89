import { describe, expect, it } from 'vitest';
import { logged, requestFacts, requestLog } from '../../functions/gateway/request-log';
import type { RequestFacts } from '../../functions/spend/request-record';
import { compose } from '../../functions/shared/http/middleware';
import { newRequestContext } from '../../functions/shared/telemetry/context';
import type { GatewayRequest, HttpResponse, Middleware } from '../../functions/shared/http/types';

const req = { path: '/v1/things' } as GatewayRequest;
const answer = (body: string): HttpResponse => ({ statusCode: 200, body });

/** A middleware that records when it runs before and after the rest of the chain. */
const recording =
  (name: string, trail: string[]): Middleware =>
  async (_req, next) => {
    trail.push(`${name}:before`);
    const res = await next();
    trail.push(`${name}:after`);
    return res;
  };

describe('compose', () => {
  it('runs the handler alone when there is no middleware', async () => {
    const handler = async () => answer('plain');
    expect(compose([], handler)).toBe(handler);
    expect(await compose([], handler)(req)).toEqual(answer('plain'));
  });

  it('runs middleware in order, the first one outermost, around the handler', async () => {
    const trail: string[] = [];
    const handler = compose([recording('a', trail), recording('b', trail)], async (r) => {
      trail.push(`handler:${r.path}`);
      return answer('done');
    });
    expect(await handler(req)).toEqual(answer('done'));
    expect(trail).toEqual(['a:before', 'b:before', 'handler:/v1/things', 'b:after', 'a:after']);
  });

  it('lets a middleware change the response on its way out', async () => {
    const tag: Middleware = async (_req, next) => {
      const res = await next();
      return { ...res, headers: { ...res.headers, 'x-tag': 'yes' } };
    };
    expect(await compose([tag], async () => answer('x'))(req)).toEqual({ statusCode: 200, body: 'x', headers: { 'x-tag': 'yes' } });
  });

  it('stops at a middleware that answers without calling next', async () => {
    const trail: string[] = [];
    const refuse: Middleware = async () => ({ statusCode: 403, body: 'no' });
    const handler = compose([recording('a', trail), refuse, recording('c', trail)], async () => {
      trail.push('handler');
      return answer('never');
    });
    expect(await handler(req)).toEqual({ statusCode: 403, body: 'no' });
    expect(trail).toEqual(['a:before', 'a:after']);
  });

  it('rejects with what a middleware throws, even synchronously, and skips the rest', async () => {
    const trail: string[] = [];
    const boom: Middleware = () => {
      throw new Error('refused');
    };
    const handler = compose([boom, recording('b', trail)], async () => answer('never'));
    await expect(handler(req)).rejects.toThrow('refused');
    expect(trail).toEqual([]);
  });

  it('passes handler errors out through the middleware, which can see them', async () => {
    const seen: unknown[] = [];
    const watch: Middleware = async (_req, next) => {
      try {
        return await next();
      } catch (err) {
        seen.push(err);
        throw err;
      }
    };
    const failure = new Error('handler failed');
    await expect(
      compose([watch], async () => {
        throw failure;
      })(req),
    ).rejects.toBe(failure);
    expect(seen).toEqual([failure]);
  });
});

describe('requestLog', () => {
  const inferenceRequest = (): GatewayRequest =>
    ({
      method: 'POST',
      path: '/v1/chat/completions',
      headers: {},
      traceId: 'trace',
      context: newRequestContext('trace'),
      auth: { keyId: 'key', workspaceId: 'ws', organisationId: 'org', scopes: ['gateway'] },
      receivedAt: Date.now(),
    }) as unknown as GatewayRequest;

  it('opens the log record before the handler, which fills it through requestFacts, also on a copy of the request', async () => {
    const r = inferenceRequest();
    let seen: RequestFacts | undefined;
    const handler = compose([requestLog('chat.completions')], async (sent) => {
      seen = requestFacts({ ...sent, headers: { changed: 'yes' } });
      seen.provider = 'openai';
      return { statusCode: 201, body: Buffer.from('{}') };
    });
    expect(r.context.afterResponse).toHaveLength(0);
    expect((await handler(r)).statusCode).toBe(201);
    expect(seen).toMatchObject({ route: 'chat.completions', provider: 'openai', status: 201 });
    // The record itself is written after the response.
    expect(r.context.afterResponse).toHaveLength(1);
  });

  it('logs the status of what the handler throws, and rethrows it', async () => {
    const r = inferenceRequest();
    let facts: RequestFacts | undefined;
    const refused = Object.assign(new Error('bad body'), { status: 400 });
    const handler = compose([requestLog('embeddings')], async (sent) => {
      facts = requestFacts(sent);
      throw refused;
    });
    await expect(handler(r)).rejects.toBe(refused);
    expect(facts?.status).toBe(400);
  });

  it('refuses to hand out facts on a route without the middleware', () => {
    expect(() => requestFacts(inferenceRequest())).toThrow(/lacks the requestLog middleware/);
  });

  it('names the route and its middleware together', () => {
    const route = logged('rerank');
    expect(route.name).toBe('rerank');
    expect(route.use).toHaveLength(1);
  });
});
