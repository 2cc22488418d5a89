import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { call, startTestGateway } from '../support/gateway';

// Config is parsed once per process: functions/ modules are imported only after the
// gateway has started (the tables' env is in place from test/support/setup.ts anyway).
type Limiter = typeof import('../../functions/policies/limiter');
type LimitSubject = import('../../functions/policies/limiter').LimitSubject;
type RateLimitGrant = import('../../functions/policies/limiter').RateLimitGrant;
interface Refusal {
  status: number;
  type: string;
  code: string | null;
  message: string;
  headers: Record<string, string>;
}

let gw: LocalGateway;
let limiter: Limiter;

beforeAll(async () => {
  gw = await startTestGateway();
  limiter = await import('../../functions/policies/limiter');
});
afterAll(async () => {
  await gw?.stop();
});

/** Inside a minute, 45 s before the next one: windows and retry-after are predictable. */
const T0 = Math.floor(Date.now() / 60_000) * 60_000 + 15_000;
const NEXT_MINUTE = T0 + 45_000;

let workspaces = 0;
/** Each test gets its own workspace, so its policies apply to nothing else. */
async function freshWorkspace(): Promise<string> {
  const res = await call(gw, 'POST', '/v1/workspaces', { body: { name: `limiter ${++workspaces}` } });
  expect(res.status).toBe(200);
  return res.body.id;
}

async function createPolicy(workspaceId: string, body: Record<string, unknown>): Promise<{ id: string; name: string | null }> {
  const res = await call(gw, 'POST', '/v1/policies/rate-limits', { body: { ...body, workspace_id: workspaceId } });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

const subject = (workspaceId: string, extra: Partial<LimitSubject> = {}): LimitSubject => ({
  workspaceId,
  organisationId: gw.organisationId,
  apiKeyId: 'key_test',
  metadata: {},
  ...extra,
});

function asRefusal(err: unknown): Refusal {
  const e = err as Refusal;
  if (e?.status !== 429) throw err;
  return e;
}

/** One call: the grant, or the 429 it was refused with (anything else fails the test). */
async function attempt(s: LimitSubject, now = T0): Promise<{ grant?: RateLimitGrant; refusal?: Refusal }> {
  try {
    return { grant: await limiter.enforceRateLimits(s, now) };
  } catch (err) {
    return { refusal: asRefusal(err) };
  }
}

async function fire(n: number, s: LimitSubject, now = T0): Promise<{ admitted: RateLimitGrant[]; refused: Refusal[] }> {
  const results = await Promise.all(Array.from({ length: n }, () => attempt(s, now)));
  return {
    admitted: results.flatMap((r) => (r.grant ? [r.grant] : [])),
    refused: results.flatMap((r) => (r.refusal ? [r.refusal] : [])),
  };
}

describe('requests policies', () => {
  it('30 concurrent calls against a limit of 10 admit exactly 10', async () => {
    const ws = await freshWorkspace();
    const policy = await createPolicy(ws, { name: 'ten', type: 'requests', unit: 'rpm', value: 10 });
    const { admitted, refused } = await fire(30, subject(ws));
    expect(admitted).toHaveLength(10);
    expect(refused).toHaveLength(20);
    expect(admitted.map((g) => Number(g.headers['x-ratelimit-remaining'])).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(admitted[0]!.headers).toMatchObject({ 'x-ratelimit-limit': '10', 'x-ratelimit-reset': '45' });
    for (const r of refused) {
      expect(r).toMatchObject({ status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded' });
      expect(r.message).toContain(policy.id);
      expect(r.message).toContain("'ten'");
      expect(r.message).toContain('10 requests per minute');
      expect(r.headers).toEqual({
        'retry-after': '45',
        'x-ratelimit-limit': '10',
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': '45',
      });
    }
  });

  it('group_by metadata._user gives each user its own bucket; users without it share one', async () => {
    const ws = await freshWorkspace();
    await createPolicy(ws, { type: 'requests', unit: 'rpm', value: 2, group_by: [{ key: 'metadata._user' }] });
    const u1 = await fire(3, subject(ws, { metadata: { _user: 'u1' } }));
    const u2 = await fire(3, subject(ws, { metadata: { _user: 'u2' } }));
    const anonymous = await fire(3, subject(ws, { metadata: { other: 'x' } }));
    expect([u1, u2, anonymous].map((r) => r.admitted.length)).toEqual([2, 2, 2]);
    expect((await fire(1, subject(ws, { metadata: { _user: 'u1' } }))).admitted).toHaveLength(0);
    expect((await fire(1, subject(ws, { metadata: { _user: 'u3' } }))).admitted).toHaveLength(1);
  });

  it('group_by api_key: one bucket per key', async () => {
    const ws = await freshWorkspace();
    await createPolicy(ws, { type: 'requests', unit: 'rph', value: 1, group_by: [{ key: 'api_key' }, { key: 'model' }] });
    expect((await fire(2, subject(ws, { apiKeyId: 'key_a', model: 'm' }))).admitted).toHaveLength(1);
    expect((await fire(2, subject(ws, { apiKeyId: 'key_b', model: 'm' }))).admitted).toHaveLength(1);
    expect((await fire(2, subject(ws, { apiKeyId: 'key_a', model: 'n' }))).admitted).toHaveLength(1);
  });

  it('applies only when the conditions match', async () => {
    const ws = await freshWorkspace();
    await createPolicy(ws, { type: 'requests', unit: 'rpm', value: 1, conditions: [{ key: 'model', value: 'gpt-4o' }] });
    expect((await fire(3, subject(ws, { model: 'gpt-4o' }))).admitted).toHaveLength(1);
    const other = await fire(5, subject(ws, { model: 'gpt-4o-mini' }));
    expect(other.admitted).toHaveLength(5);
    expect(other.admitted[0]).toEqual({ headers: {}, tokenBuckets: [] });
    expect((await fire(2, subject(ws))).admitted).toHaveLength(2); // no model: no match
  });

  it('conditions are ANDed; `*` matches any present value, not a missing one', async () => {
    const ws = await freshWorkspace();
    await createPolicy(ws, {
      type: 'requests',
      unit: 'rpm',
      value: 1,
      conditions: [
        { key: 'provider', value: 'openai' },
        { key: 'metadata.team', value: '*' },
        { key: 'workspace_id', value: ws },
        { key: 'organisation_id', value: gw.organisationId },
      ],
    });
    expect((await attempt(subject(ws, { provider: 'openai', metadata: { team: 'a' } }))).grant).toBeDefined();
    expect((await attempt(subject(ws, { provider: 'openai', metadata: { team: 'b' } }))).refusal).toBeDefined();
    expect((await fire(2, subject(ws, { provider: 'openai' }))).admitted).toHaveLength(2);
    expect((await fire(2, subject(ws, { provider: 'anthropic', metadata: { team: 'a' } }))).admitted).toHaveLength(2);
    expect((await fire(2, subject(ws, { provider: 'openai', organisationId: 'another-org', metadata: { team: 'a' } }))).admitted).toHaveLength(2);
  });

  it('windows roll over into the next minute', async () => {
    const ws = await freshWorkspace();
    await createPolicy(ws, { type: 'requests', unit: 'rpm', value: 2 });
    expect((await fire(3, subject(ws), T0)).admitted).toHaveLength(2);
    const late = await attempt(subject(ws), NEXT_MINUTE - 1);
    expect(late.refusal?.headers['retry-after']).toBe('1');
    const next = await fire(3, subject(ws), NEXT_MINUTE);
    expect(next.admitted).toHaveLength(2);
    expect(next.admitted.map((g) => g.headers['x-ratelimit-reset'])).toEqual(['60', '60']);
    expect(next.refused[0]!.headers['retry-after']).toBe('60');
  });

  it('hour and day windows', async () => {
    const ws = await freshWorkspace();
    await createPolicy(ws, { type: 'requests', unit: 'rpd', value: 1 });
    const day = 86_400_000;
    const noonUtc = Math.floor(T0 / day) * day + day / 2;
    expect((await attempt(subject(ws), noonUtc)).grant?.headers['x-ratelimit-reset']).toBe(String(day / 2000));
    expect((await attempt(subject(ws), noonUtc + day / 2 - 1000)).refusal?.headers['retry-after']).toBe('1');
    expect((await attempt(subject(ws), noonUtc + day / 2)).grant).toBeDefined();
  });

  it('reports the tightest request policy in the grant headers', async () => {
    const ws = await freshWorkspace();
    await createPolicy(ws, { type: 'requests', unit: 'rpm', value: 5 });
    await createPolicy(ws, { type: 'requests', unit: 'rph', value: 3 });
    const { grant } = await attempt(subject(ws));
    const hour = 3_600_000;
    const hourReset = String((Math.floor(T0 / hour) * hour + hour - T0) / 1000);
    expect(grant!.headers).toEqual({ 'x-ratelimit-limit': '3', 'x-ratelimit-remaining': '2', 'x-ratelimit-reset': hourReset });
  });

  it("a refusal by one policy undoes the others' increments", async () => {
    const ws = await freshWorkspace();
    await createPolicy(ws, { name: 'workspace', type: 'requests', unit: 'rpm', value: 3 });
    const perUser = await createPolicy(ws, {
      name: 'u1 only',
      type: 'requests',
      unit: 'rpm',
      value: 1,
      conditions: [{ key: 'metadata._user', value: 'u1' }],
    });
    const u1 = subject(ws, { metadata: { _user: 'u1' } });
    expect((await attempt(u1)).grant).toBeDefined();
    const refused = await attempt(u1);
    expect(refused.refusal?.message).toContain(perUser.id);
    // The workspace policy counted 1 request, not 2: two more fit.
    const others = await fire(3, subject(ws, { metadata: { _user: 'u2' } }));
    expect(others.admitted).toHaveLength(2);
    expect(others.refused[0]!.message).toContain("'workspace'");
  });

  it('a value lowered mid-window keeps the shards the window counted on: the new limit holds across them', async () => {
    // 1,000 a minute is two shards at the default minimum of 500; 600 alone would be one.
    const ws = await freshWorkspace();
    const policy = await createPolicy(ws, { type: 'requests', unit: 'rpm', value: 1_000 });
    const before = (await fire(400, subject(ws))).admitted.length;
    expect(before).toBe(400);
    const lowered = await call(gw, 'PUT', `/v1/policies/rate-limits/${policy.id}?workspace_id=${ws}`, { body: { value: 600 } });
    expect(lowered.status, lowered.text).toBe(200);
    expect(lowered.body.value).toBe(600);
    expect(lowered.body).not.toHaveProperty('shard_value');
    const after = (await fire(600, subject(ws))).admitted.length;
    // Both shards are read against slices of 300: never more than 600 in the window. (With one
    // shard, the requests counted on the second would be forgotten: about 800 admitted.)
    expect(before + after).toBeLessThanOrEqual(600);
    expect(after).toBeGreaterThan(0);
  });

  it('an archived policy stops applying', async () => {
    const ws = await freshWorkspace();
    const policy = await createPolicy(ws, { type: 'requests', unit: 'rpm', value: 1 });
    expect((await fire(2, subject(ws))).admitted).toHaveLength(1);
    const archived = await call(gw, 'POST', `/v1/policies/rate-limits/${policy.id}/archive?workspace_id=${ws}`);
    expect(archived.status).toBe(200);
    limiter.clearPolicyCache();
    expect((await fire(3, subject(ws))).admitted).toHaveLength(3);
  });
});

describe('tokens policies', () => {
  it('admit until the consumed tokens reach the limit; recordTokenUsage adds', async () => {
    const ws = await freshWorkspace();
    const policy = await createPolicy(ws, { name: 'budget', type: 'tokens', unit: 'rpm', value: 100 });
    const first = await limiter.enforceRateLimits(subject(ws), T0);
    expect(first.headers).toEqual({ 'x-ratelimit-limit-tokens': '100', 'x-ratelimit-remaining-tokens': '100', 'x-ratelimit-reset-tokens': '45' });
    expect(first.tokenBuckets).toHaveLength(1);
    await limiter.recordTokenUsage(first, 60, T0);
    await limiter.recordTokenUsage(first, 0, T0); // no-op
    const second = await limiter.enforceRateLimits(subject(ws), T0);
    expect(second.headers['x-ratelimit-remaining-tokens']).toBe('40');
    await limiter.recordTokenUsage(second, 40, T0);
    const refused = await attempt(subject(ws), T0);
    expect(refused.refusal).toMatchObject({ status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    expect(refused.refusal!.message).toContain(policy.id);
    expect(refused.refusal!.message).toContain('100 tokens per minute');
    expect(refused.refusal!.headers).toMatchObject({ 'retry-after': '45', 'x-ratelimit-limit-tokens': '100', 'x-ratelimit-remaining-tokens': '0' });
    expect((await attempt(subject(ws), NEXT_MINUTE)).grant).toBeDefined();
  });

  it('requests admitted under the limit may each add their usage (the documented overshoot)', async () => {
    const ws = await freshWorkspace();
    await createPolicy(ws, { type: 'tokens', unit: 'rpm', value: 10 });
    const { admitted } = await fire(5, subject(ws));
    expect(admitted).toHaveLength(5);
    await Promise.all(admitted.map((g) => limiter.recordTokenUsage(g, 10, T0)));
    expect((await fire(3, subject(ws))).admitted).toHaveLength(0);
  });

  it('a token refusal undoes the request increment', async () => {
    const ws = await freshWorkspace();
    await createPolicy(ws, { type: 'requests', unit: 'rpm', value: 2 });
    await createPolicy(ws, { type: 'tokens', unit: 'rpm', value: 10, conditions: [{ key: 'metadata.kind', value: 't' }] });
    const tokenSubject = subject(ws, { metadata: { kind: 't' } });
    const grant = await limiter.enforceRateLimits(tokenSubject, T0);
    expect(grant.headers['x-ratelimit-remaining']).toBe('1');
    await limiter.recordTokenUsage(grant, 10, T0);
    expect((await attempt(tokenSubject)).refusal?.message).toContain('tokens');
    // The refused call did not use the request budget: one more request fits.
    expect((await fire(2, subject(ws))).admitted).toHaveLength(1);
  });

  it('in a busy process the usage of many requests is held and written together, once the process is idle', async () => {
    const invocations = await import('../../functions/shared/telemetry/invocations');
    const ws = await freshWorkspace();
    const policy = await createPolicy(ws, { type: 'tokens', unit: 'rpm', value: 1_000 });
    const grants = (await fire(20, subject(ws))).admitted;
    expect(grants).toHaveLength(20);
    const tokensStored = () => storedCount(ws, policy.id, T0, 'tokens');
    invocations.invocationStarted();
    invocations.invocationStarted(); // two invocations at once: the usage is left to the process
    try {
      await Promise.all(grants.map((g) => limiter.recordTokenUsage(g, 7, T0)));
      expect(await tokensStored()).toBe(0);
    } finally {
      await invocations.invocationEnded();
      await invocations.invocationEnded(); // idle: writes what is held, and waits
    }
    expect(await tokensStored()).toBe(140);
    expect((await limiter.enforceRateLimits(subject(ws), T0)).headers['x-ratelimit-remaining-tokens']).toBe('860');
  });
});

/** The usage counter of a policy's single bucket in the window of `now`, read from DynamoDB. */
async function storedCount(ws: string, policyId: string, now = T0, type = 'requests'): Promise<number> {
  const { queryAll } = await import('../../functions/shared/db/ops');
  const minute = Math.floor(now / 60_000) * 60_000;
  const items = await queryAll<{ count: number }>('usage', `WS#${ws}#RL#${policyId}#all`, `${type}#rpm#${minute}`);
  return items.reduce((sum, item) => sum + Number(item.count), 0);
}

describe('reservations', () => {
  it('a busy container reserves ahead of demand: far fewer round trips than requests, never a unit it did not reserve', async () => {
    const { storageCalls } = await import('../../functions/shared/db/client');
    const ws = await freshWorkspace();
    // Under 1,000 a window: one counter (a larger limit is sharded, test/integration/sharded-limits.test.ts).
    const policy = await createPolicy(ws, { type: 'requests', unit: 'rpm', value: 900 });
    const updates = () => Object.entries(storageCalls).reduce((n, [name, calls]) => (name.startsWith('Update') ? n + calls : n), 0);
    const before = updates();
    const remaining: number[] = [];
    for (let i = 0; i < 300; i++) {
      const { grant } = await attempt(subject(ws));
      remaining.push(Number(grant!.headers['x-ratelimit-remaining']));
    }
    const roundTrips = updates() - before;
    expect(roundTrips).toBeGreaterThan(0);
    expect(roundTrips).toBeLessThan(150);
    // One container alone: every request sees the count go up by exactly one.
    expect(remaining).toEqual(Array.from({ length: 300 }, (_, i) => 900 - 1 - i));
    // Units are handed out only after DynamoDB counted them; some may be reserved ahead.
    const stored = await storedCount(ws, policy.id);
    expect(stored).toBeGreaterThanOrEqual(300);
    expect(stored - 300).toBeLessThanOrEqual(600);
  });

  it('near a small limit reservations shrink to the waiting requests: every unit used, none stranded', async () => {
    const ws = await freshWorkspace();
    const policy = await createPolicy(ws, { type: 'requests', unit: 'rpm', value: 50 });
    let admitted = 0;
    for (let i = 0; i < 80; i++) if ((await attempt(subject(ws))).grant) admitted++;
    expect(admitted).toBe(50);
    expect(await storedCount(ws, policy.id)).toBe(50);
  });
});

/** Run `calls` concurrent calls here and in a child process at one instant, `rounds` times. */
async function raceAcrossProcesses(ws: string, calls: number, rounds = 1, pauseMs = 0) {
  const script = resolve(import.meta.dirname, '../support/limiter-child.ts');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', script, ws, gw.organisationId, String(calls), String(T0), JSON.stringify({ cross: 'yes' }), String(rounds), String(pauseMs)],
    { env: { ...process.env }, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => {
    const line = await lines.next();
    if (line.done) throw new Error(`child ended early (exit ${await exited}): ${stderr}`);
    return line.value;
  };

  // Both sides warm (policies cached, connections open) before the race starts.
  await limiter.enforceRateLimits(subject(ws), T0);
  expect(await next()).toBe('ready');
  // Both fire at one agreed instant, so the two processes' calls interleave.
  const startAt = Date.now() + 250;
  child.stdin.write(`go ${startAt}\n`);
  await new Promise((r) => setTimeout(r, Math.max(0, startAt - Date.now())));
  const fireRounds = async () => {
    let admitted = 0;
    let refused = 0;
    for (let round = 0; round < rounds; round++) {
      if (round > 0) await new Promise((r) => setTimeout(r, pauseMs));
      const result = await fire(calls, subject(ws, { metadata: { cross: 'yes' } }));
      admitted += result.admitted.length;
      refused += result.refused.length;
    }
    return { admitted, refused };
  };
  const [here, childLine] = await Promise.all([fireRounds(), next()]);
  const there = JSON.parse(childLine) as { admitted: number; refused: number; errors: string[] };
  expect(await exited).toBe(0);
  expect(there.errors).toEqual([]);
  return { here, there };
}

describe('across processes', () => {
  it('15 calls here and 15 in another process against a limit of 10 admit exactly 10', async () => {
    const ws = await freshWorkspace();
    await createPolicy(ws, { type: 'requests', unit: 'rpm', value: 10, conditions: [{ key: 'metadata.cross', value: 'yes' }] });
    const { here, there } = await raceAcrossProcesses(ws, 15);
    expect(here.admitted + there.admitted).toBe(10);
    expect(here.refused + there.refused).toBe(20);
  });

  it('sustained traffic from two processes, both reserving ahead: exactly the limit', { timeout: 60_000 }, async () => {
    const ws = await freshWorkspace();
    const policy = await createPolicy(ws, { type: 'requests', unit: 'rpm', value: 300, conditions: [{ key: 'metadata.cross', value: 'yes' }] });
    // 40 rounds x 12 calls = 480 per process: each alone asks for more than the limit, so
    // both are still asking when it is reached and no unit reserved ahead is left unused.
    const { here, there } = await raceAcrossProcesses(ws, 12, 40, 5);
    expect(here.admitted + there.admitted).toBe(300);
    expect(here.refused + there.refused).toBe(660);
    expect(await storedCount(ws, policy.id)).toBe(300);
  });
});
