import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { upstreamError } from '../../functions/shared/errors';
import { parseGatewayConfig, type ConfigNode } from '../../functions/shared/gateway-config';
import { matches } from '../../functions/shared/routing-conditions';
import { compileLinearRegex } from '../../functions/shared/linear-regex';
import { pickWeighted, retryAfterMs, routeRequest, type AttemptResult, type Leaf, type RoutingDeps } from '../../functions/gateway/routing';

const reply = (status: number, headers: Record<string, string> = {}): AttemptResult => ({
  response: { status, headers, body: Readable.from([]) },
});

/** A scripted provider per leaf name: each attempt takes the next status. */
function script(plan: Record<string, Array<number | 'net'>>) {
  const calls: string[] = [];
  const attempt = async (leaf: Leaf): Promise<AttemptResult> => {
    const name = leaf.node.name ?? leaf.node.provider!;
    calls.push(name);
    const next = plan[name]!.shift() ?? 200;
    return next === 'net' ? { error: upstreamError('connection refused') } : reply(next);
  };
  return { attempt, calls };
}

function deps(random = () => 0.5): RoutingDeps & { waits: number[] } {
  const waits: number[] = [];
  return { random, sleep: async (ms) => void waits.push(ms), backoffBaseMs: 100, waits };
}

const input = { metadata: {}, params: {}, url: { pathname: '/v1/chat/completions' } };
const leaf = (name: string, extra: Partial<ConfigNode> = {}): ConfigNode => ({ provider: 'openai', name, ...extra });

describe('retries', () => {
  it('retries retryable statuses up to `attempts` times, then returns the last answer', async () => {
    const { attempt, calls } = script({ a: [503, 503, 503, 503] });
    const d = deps();
    const out = await routeRequest(leaf('a', { retry: { attempts: 2 } }), input, attempt, d);
    expect(calls).toEqual(['a', 'a', 'a']);
    expect(out.retries).toBe(2);
    expect(out.result.response!.status).toBe(503);
    expect(out.attempts.map((a) => a.status)).toEqual([503, 503, 503]);
  });

  it('stops retrying on success and counts the retries', async () => {
    const { attempt, calls } = script({ a: [429, 'net', 200] });
    const out = await routeRequest(leaf('a', { retry: { attempts: 5 } }), input, attempt, deps());
    expect(calls).toHaveLength(3);
    expect(out.retries).toBe(2);
    expect(out.result.response!.status).toBe(200);
  });

  it('does not retry statuses outside on_status_codes', async () => {
    const { attempt, calls } = script({ a: [400] });
    await routeRequest(leaf('a', { retry: { attempts: 3 } }), input, attempt, deps());
    const custom = script({ a: [503, 418, 200] });
    const out = await routeRequest(leaf('a', { retry: { attempts: 3, on_status_codes: [503] } }), input, custom.attempt, deps());
    expect(calls).toEqual(['a']);
    expect(custom.calls).toEqual(['a', 'a']);
    expect(out.result.response!.status).toBe(418);
  });

  it('backs off exponentially with full jitter, within bounds', async () => {
    const { attempt } = script({ a: [500, 500, 500, 500, 500, 500] });
    const d = deps(() => 0.999);
    await routeRequest(leaf('a', { retry: { attempts: 5 } }), input, attempt, d);
    expect(d.waits).toHaveLength(5);
    d.waits.forEach((w, n) => {
      expect(w).toBeGreaterThanOrEqual(0);
      expect(w).toBeLessThanOrEqual(Math.min(10_000, 100 * 2 ** n));
    });
    expect(d.waits[4]!).toBeGreaterThan(d.waits[0]! * 8);
    const zero = deps(() => 0);
    await routeRequest(leaf('a', { retry: { attempts: 1 } }), input, script({ a: [500] }).attempt, zero);
    expect(zero.waits).toEqual([0]);
  });

  it('honours retry-after / retry-after-ms only when asked, and gives up on long waits', async () => {
    const asked = deps();
    let n = 0;
    const withHeader = async () => (n++ === 0 ? reply(429, { 'retry-after': '2' }) : reply(200));
    await routeRequest(leaf('a', { retry: { attempts: 1, use_retry_after_header: true } }), input, withHeader, asked);
    expect(asked.waits).toEqual([2000]);
    n = 0;
    const ignored = deps(() => 0);
    await routeRequest(leaf('a', { retry: { attempts: 1 } }), input, withHeader, ignored);
    expect(ignored.waits).toEqual([0]);
    const tooLong = deps();
    const out = await routeRequest(
      leaf('a', { retry: { attempts: 3, use_retry_after_header: true } }),
      input,
      async () => reply(429, { 'retry-after': '120' }),
      tooLong,
    );
    expect(tooLong.waits).toEqual([]);
    expect(out.retries).toBe(0);
    expect(retryAfterMs({ 'retry-after-ms': '150' })).toBe(150);
    expect(retryAfterMs({ 'retry-after': new Date(Date.now() + 5000).toUTCString() })).toBeGreaterThan(3000);
  });
});

describe('strategies', () => {
  it('fallback walks targets in order until one succeeds, and reports its path', async () => {
    const { attempt, calls } = script({ a: [500], b: ['net'], c: [200] });
    const config = parseGatewayConfig({ strategy: { mode: 'fallback' }, targets: [leaf('a'), leaf('b'), leaf('c')] });
    const out = await routeRequest(config, input, attempt, deps());
    expect(calls).toEqual(['a', 'b', 'c']);
    expect(out.leaf.path).toBe('config.targets[2]');
  });

  it('fallback stops at a status outside on_status_codes', async () => {
    const { attempt, calls } = script({ a: [400], b: [200] });
    const config = parseGatewayConfig({ strategy: { mode: 'fallback', on_status_codes: [429, 503] }, targets: [leaf('a'), leaf('b')] });
    const out = await routeRequest(config, input, attempt, deps());
    expect(calls).toEqual(['a']);
    expect(out.result.response!.status).toBe(400);
  });

  it('children inherit retry settings and merge override_params', async () => {
    const { attempt, calls } = script({ a: [503, 503, 200] });
    const config = parseGatewayConfig({
      retry: { attempts: 2 },
      override_params: { temperature: 0 },
      strategy: { mode: 'single' },
      targets: [leaf('a', { override_params: { model: 'm' } })],
    });
    const out = await routeRequest(config, input, attempt, deps());
    expect(calls).toEqual(['a', 'a', 'a']);
    expect(out.leaf.node.override_params).toEqual({ temperature: 0, model: 'm' });
  });

  it('nested targets: a fallback whose second target is a load balancer', async () => {
    const { attempt, calls } = script({ a: [502], b: [200], c: [200] });
    const config = parseGatewayConfig({
      strategy: { mode: 'fallback' },
      targets: [leaf('a'), { strategy: { mode: 'loadbalance' }, targets: [leaf('b', { weight: 0 }), leaf('c', { weight: 1 })] }],
    });
    const out = await routeRequest(
      config,
      input,
      attempt,
      deps(() => 0.01),
    );
    expect(calls).toEqual(['a', 'c']);
    expect(out.leaf.path).toBe('config.targets[1].targets[1]');
  });

  it('loadbalance follows the weights (fixed-seed statistical check) and never picks weight 0', () => {
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const counts = [0, 0, 0];
    const targets = [{ weight: 1 }, { weight: 3 }, { weight: 0 }];
    for (let i = 0; i < 20_000; i++) counts[pickWeighted(targets, random)]!++;
    expect(counts[2]).toBe(0);
    expect(counts[1]! / counts[0]!).toBeGreaterThan(2.7);
    expect(counts[1]! / counts[0]!).toBeLessThan(3.3);
  });

  it('conditional routing on metadata, params and url, with a default; no match and no default is a 400', async () => {
    const config = parseGatewayConfig({
      strategy: {
        mode: 'conditional',
        conditions: [
          { query: { 'metadata.plan': { $eq: 'paid' } }, then: 'premium' },
          { query: { $or: [{ 'params.max_tokens': { $gt: 1000 } }, { 'url.pathname': { $regex: 'embeddings$' } }] }, then: 'big' },
        ],
        default: 'cheap',
      },
      targets: [leaf('premium'), leaf('big'), leaf('cheap')],
    });
    const pick = async (i: typeof input) => (await routeRequest(config, i, script({ premium: [], big: [], cheap: [] }).attempt, deps())).leaf.node.name;
    expect(await pick({ ...input, metadata: { plan: 'paid' } })).toBe('premium');
    expect(await pick({ ...input, params: { max_tokens: 2000 } })).toBe('big');
    expect(await pick({ ...input, url: { pathname: '/v1/embeddings' } })).toBe('big');
    expect(await pick(input)).toBe('cheap');
    const noDefault = parseGatewayConfig({ ...config, strategy: { ...config.strategy!, default: undefined } });
    await expect(routeRequest(noDefault, input, script({}).attempt, deps())).rejects.toMatchObject({ status: 400, code: 'no_route_matched' });
  });

  it('condition operators', () => {
    const i = { metadata: { tier: 'gold', n: '5' }, params: { model: 'gpt-4o', temperature: 0.2 }, url: { pathname: '/v1/chat/completions' } };
    const yes = (q: Record<string, unknown>) => expect(matches(q, i, compileLinearRegex), JSON.stringify(q)).toBe(true);
    const no = (q: Record<string, unknown>) => expect(matches(q, i, compileLinearRegex), JSON.stringify(q)).toBe(false);
    yes({ 'metadata.tier': 'gold' });
    yes({ 'metadata.tier': { $ne: 'silver' } });
    yes({ 'metadata.n': { $gte: 5, $lt: 6 } });
    no({ 'metadata.n': { $gt: 5 } });
    yes({ 'params.model': { $in: ['gpt-4o', 'x'] } });
    no({ 'params.model': { $nin: ['gpt-4o'] } });
    yes({ 'params.temperature': { $lte: 0.2 } });
    yes({ 'url.pathname': { $regex: '^/v1/chat' } });
    yes({ 'params.model': { $regex: '/GPT-4/i' } });
    no({ 'params.model': { $regex: '(?=gpt)' } }); // lookahead: RE2 refuses it, so it matches nothing
    // A pattern that backtracks exponentially on V8 answers at once on RE2.
    no({ 'metadata.tier': { $regex: '^(g+)+$' }, 'params.model': { $regex: '^(a|aa)+$' } });
    expect(matches({ 'params.model': { $regex: 'gpt' } }, i), 'no regex engine: $regex matches nothing').toBe(false);
    yes({ $and: [{ 'metadata.tier': 'gold' }, { 'params.model': 'gpt-4o' }] });
    no({ $and: [{ 'metadata.tier': 'gold' }, { 'params.model': 'other' }] });
    no({ 'metadata.missing': { $gt: 0 } });
  });
});

describe('config validation names the JSON path of each problem', () => {
  it.each([
    [{ targets: [{ provider: 'openai' }, { weight: 1 }] }, 'config.targets[1]'],
    [{ provider: 'openai', retry: { attempts: 9 } }, 'config.retry.attempts'],
    [{ provider: 'openai', cache: { mode: 'simple', max_age: 5 } }, 'config.cache.max_age'],
    [
      { strategy: { mode: 'conditional', conditions: [{ query: {}, then: 'nope' }] }, targets: [{ provider: 'openai', name: 'a' }] },
      'config.strategy.conditions[0].then',
    ],
    [{ strategy: { mode: 'sideways' }, targets: [{ provider: 'openai' }] }, 'config.strategy.mode'],
    [{ provider: 'openai', surprise: 1 }, 'surprise'],
  ])('%j -> %s', (config, path) => {
    try {
      parseGatewayConfig(config);
      expect.unreachable();
    } catch (err) {
      expect((err as { status: number }).status).toBe(400);
      expect((err as Error).message).toContain(path);
    }
  });
});
