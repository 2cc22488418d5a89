import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GatewayError } from '../../functions/shared/errors';
import { counterWriter, type PendingIncrement } from '../../functions/spend/counters';
import * as invocations from '../../functions/shared/telemetry/invocations';
import { log } from '../../functions/shared/telemetry/logger';
import {
  amountsOf,
  cellSortKey,
  counterSortKey,
  countedMetadata,
  countersOf,
  hourRangeBounds,
  MAX_SPEND_METADATA_KEYS,
  parseCellSortKey,
  parseCounterSortKey,
  spendPartition,
} from '../../functions/spend/dimensions';
import { hourLabel, monthStart, parseHourLabel, parseInstant, reportRange } from '../../functions/spend/periods';
import { parseGroupBy } from '../../functions/spend/routes';

const at = (iso: string) => Date.parse(iso) / 1000;

/** The 400 a call throws: its param and code. */
function refusal(fn: () => unknown): { status: number; param: string | null; code: string | null } {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    return { status: err.status, param: err.param, code: err.code };
  }
  throw new Error('expected a GatewayError');
}

describe('hour buckets', () => {
  it('label every instant of a UTC hour alike, and parse back to the hour start', () => {
    expect(hourLabel(at('2026-11-25T19:00:00Z'))).toBe('2026-11-25T19');
    expect(hourLabel(at('2026-11-25T19:59:59Z'))).toBe('2026-11-25T19');
    expect(hourLabel(at('2026-11-25T20:00:00Z'))).toBe('2026-11-25T20');
    expect(parseHourLabel('2026-11-25T19')).toBe(at('2026-11-25T19:00:00Z'));
    expect(parseHourLabel('2026-11-25T19#x')).toBeUndefined();
  });

  it('sort keys carry the hour then the value; a null value is the bare hour', () => {
    expect(counterSortKey('2026-11-25T19', 'gpt-4o#mini')).toBe('2026-11-25T19#gpt-4o#mini');
    expect(parseCounterSortKey('2026-11-25T19#gpt-4o#mini')).toEqual({ hour: '2026-11-25T19', value: 'gpt-4o#mini' });
    expect(parseCounterSortKey('2026-11-25T19')).toEqual({ hour: '2026-11-25T19', value: null });
    expect(parseCounterSortKey('2026-11-25T19#')).toEqual({ hour: '2026-11-25T19', value: '' });
  });

  it('a range of hours covers every key of its first and last hour and nothing of the neighbours', () => {
    const { lo, hi } = hourRangeBounds('2026-11-25T19', '2026-11-25T21');
    const inRange = (sk: string) => sk >= lo && sk <= hi;
    for (const sk of ['2026-11-25T19', '2026-11-25T19#a', '2026-11-25T21', '2026-11-25T21#\u{10FFFF}z', '2026-11-25T20#~']) expect(inRange(sk), sk).toBe(true);
    for (const sk of ['2026-11-25T18#zz', '2026-11-25T22', '2026-11-25T22#a', '2026-11-26T00']) expect(inRange(sk), sk).toBe(false);
  });

  it('the month starts on its first day, 00:00 UTC', () => {
    expect(monthStart(at('2026-11-25T19:27:04Z'))).toBe(at('2026-11-01T00:00:00Z'));
    expect(monthStart(at('2026-01-01T00:00:00Z'))).toBe(at('2026-01-01T00:00:00Z'));
  });
});

describe('time parameters', () => {
  it('read Unix seconds and ISO 8601 (UTC without an offset)', () => {
    expect(parseInstant('1764097624', 'from')).toBe(1764097624);
    expect(parseInstant('2026-11-01', 'from')).toBe(at('2026-11-01T00:00:00Z'));
    expect(parseInstant('2026-11-01T10:30', 'from')).toBe(at('2026-11-01T10:30:00Z'));
    expect(parseInstant('2026-11-01T10:30:15.250Z', 'from')).toBe(at('2026-11-01T10:30:15Z'));
    expect(parseInstant('2026-11-01T10:30:00+02:00', 'from')).toBe(at('2026-11-01T08:30:00Z'));
    expect(parseInstant('2026-11-01T10:30:00-0130', 'from')).toBe(at('2026-11-01T12:00:00Z'));
  });

  it('refuse anything else with a 400 naming the parameter', () => {
    for (const bad of ['yesterday', '2026-02-30', '2026-13-01', '11/01/2026', '-5', '1.5', '2026-11-01T25:00Z'])
      expect(
        refusal(() => parseInstant(bad, 'to')),
        bad,
      ).toEqual({ status: 400, param: 'to', code: 'invalid_value' });
  });
});

describe('report ranges', () => {
  const now = at('2026-11-25T19:27:04Z');

  it('default to the current month so far, in whole buckets', () => {
    expect(reportRange({}, 'day', now)).toEqual({ from: at('2026-11-01T00:00:00Z'), to: at('2026-11-26T00:00:00Z') });
    expect(reportRange({}, 'hour', now)).toEqual({ from: at('2026-11-01T00:00:00Z'), to: at('2026-11-25T20:00:00Z') });
  });

  it('round from down and to up to the granularity; a boundary ends the bucket before it', () => {
    expect(reportRange({ from: '2026-11-25T10:15:00Z', to: '2026-11-25T12:00:00Z' }, 'hour', now)).toEqual({
      from: at('2026-11-25T10:00:00Z'),
      to: at('2026-11-25T12:00:00Z'),
    });
    expect(reportRange({ from: '2026-11-25T10:15:00Z', to: '2026-11-25T10:20:00Z' }, 'day', now)).toEqual({
      from: at('2026-11-25T00:00:00Z'),
      to: at('2026-11-26T00:00:00Z'),
    });
  });

  it('need to after from, and at most 31 days of hours or 366 days of days', () => {
    expect(refusal(() => reportRange({ from: '2026-11-02', to: '2026-11-01' }, 'day', now))).toEqual({ status: 400, param: 'to', code: 'invalid_value' });
    expect(refusal(() => reportRange({ from: '2026-11-01', to: '2026-11-01' }, 'day', now))).toMatchObject({ param: 'to' });
    expect(reportRange({ from: '2026-10-01', to: '2026-11-01' }, 'hour', now).to).toBe(at('2026-11-01T00:00:00Z'));
    expect(refusal(() => reportRange({ from: '2026-10-01', to: '2026-11-01T00:00:01Z' }, 'hour', now))).toEqual({
      status: 400,
      param: 'from',
      code: 'range_too_long',
    });
    expect(reportRange({ from: '2024-01-01', to: '2025-01-01' }, 'day', now).from).toBe(at('2024-01-01T00:00:00Z'));
    expect(refusal(() => reportRange({ from: '2024-01-01', to: '2025-01-02' }, 'day', now))).toMatchObject({ param: 'from', code: 'range_too_long' });
    expect(refusal(() => reportRange({ from: 'soon' }, 'day', now))).toMatchObject({ param: 'from', code: 'invalid_value' });
  });
});

describe('group_by', () => {
  it('takes the base dimensions and metadata.<key>, workspace by default', () => {
    for (const d of ['workspace', 'api_key', 'provider', 'model', 'metadata._user', 'metadata.team.name']) expect(parseGroupBy(d)).toBe(d);
    expect(parseGroupBy(undefined)).toBe('workspace');
  });

  it('refuses anything else with a 400 naming group_by', () => {
    for (const bad of ['user', 'metadata.', `metadata.${'k'.repeat(65)}`, 'Model'])
      expect(
        refusal(() => parseGroupBy(bad)),
        bad,
      ).toEqual({ status: 400, param: 'group_by', code: 'invalid_value' });
  });
});

describe('the counters of a request', () => {
  const base = {
    workspace_id: 'ws_1',
    api_key_id: 'key_1',
    provider: 'openai',
    model: 'gpt-4o-mini',
    metadata: {},
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    created_at: at('2026-11-25T19:27:04Z'),
  };

  it("are the hour's cell of key, provider and model, and each metadata key's, in the hour of the request", () => {
    const keys = countersOf({ ...base, metadata: { team: 'search', _user: 'u-1' } });
    expect(keys).toEqual([
      { pk: spendPartition('ws_1', 'cell'), sk: '2026-11-25T19#["key_1","openai","gpt-4o-mini"]' },
      { pk: 'WS#ws_1#SPEND#metadata._user', sk: '2026-11-25T19#u-1' },
      { pk: 'WS#ws_1#SPEND#metadata.team', sk: '2026-11-25T19#search' },
    ]);
    expect(countersOf({ ...base, provider: null, model: null })).toEqual([{ pk: spendPartition('ws_1', 'cell'), sk: '2026-11-25T19#["key_1",null,null]' }]);
  });

  it('key cells so that any provider or model name reads back as it was, within a sort key', () => {
    for (const cell of [
      { api_key: 'key_1', provider: 'openai', model: 'ft:gpt-4o#"quoted"\\x' },
      { api_key: 'key_1', provider: null, model: null },
      { api_key: 'key_2', provider: 'bedrock', model: 'é'.repeat(300) },
    ]) {
      const sk = cellSortKey('2026-11-25T19', cell);
      expect(parseCellSortKey(sk)).toEqual({ hour: '2026-11-25T19', cell });
      const { lo, hi } = hourRangeBounds('2026-11-25T19', '2026-11-25T19');
      expect(sk > lo && sk < hi).toBe(true);
    }
    // An oversized model is cut until the key fits DynamoDB's 1,024 bytes.
    const long = cellSortKey('2026-11-25T19', { api_key: 'key_1', provider: 'openai', model: '"'.repeat(600) });
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(1024);
    expect(parseCellSortKey(long)!.cell.model!.length).toBeGreaterThan(100);
    expect(parseCellSortKey('2026-11-25T19#openai')).toBeUndefined();
  });

  it('bound metadata: well-known keys first, at most 8 keys, no empty or oversized ones', () => {
    const many = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`k${i}`, `v${i}`]));
    const counted = countedMetadata({ ...many, _environment: 'prod', empty: '', [`${'x'.repeat(65)}`]: 'long key', big: 'é'.repeat(257) });
    expect(counted).toHaveLength(MAX_SPEND_METADATA_KEYS);
    expect(counted[0]).toEqual(['_environment', 'prod']);
    expect(counted.map(([k]) => k)).toEqual(['_environment', 'k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6']);
    expect(countedMetadata({ ok: 'é'.repeat(256), big: 'é'.repeat(257) })).toEqual([['ok', 'é'.repeat(256)]]);
  });

  it('add one request, its tokens, its cost in whole nano-dollars and whether it was unpriced', () => {
    expect(amountsOf({ ...base, cost_usd: 0.000123456, pricing_unknown: false })).toEqual({
      requests: 1,
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
      cost_nano_usd: 123456,
      unpriced_requests: 0,
    });
    expect(amountsOf({ ...base, usage: null, cost_usd: null, pricing_unknown: true })).toEqual({
      requests: 1,
      prompt_tokens: 0,
      completion_tokens: 0,
      total_tokens: 0,
      cost_nano_usd: 0,
      unpriced_requests: 1,
    });
    // 0.1 + 0.2 in nano-dollars is exact.
    expect(amountsOf({ ...base, cost_usd: 0.1 }).cost_nano_usd + amountsOf({ ...base, cost_usd: 0.2 }).cost_nano_usd).toBe(300_000_000);
  });
});

describe('the counter writer', () => {
  const amounts = (requests: number, cost = 0) => ({
    requests,
    prompt_tokens: 2 * requests,
    completion_tokens: requests,
    total_tokens: 3 * requests,
    cost_nano_usd: cost,
    unpriced_requests: 0,
  });
  const ws = { pk: 'WS#w#SPEND#workspace', sk: '2026-11-25T19#w' };
  const model = (i: number) => ({ pk: 'WS#w#SPEND#model', sk: `2026-11-25T19#m${i}` });

  function recordingWriter() {
    const writes: PendingIncrement[] = [];
    let gate: Promise<void> = Promise.resolve();
    const add = counterWriter('usage', async (_table, item) => {
      await gate;
      writes.push(structuredClone(item));
    });
    return { writes, add, hold: (until: Promise<void>) => (gate = until) };
  }

  it('sums the increments of concurrent requests into one write per counter', async () => {
    const { writes, add } = recordingWriter();
    await Promise.all(Array.from({ length: 50 }, (_, i) => add([ws, model(i % 5)], amounts(1, 7), 100 + i)));
    expect(writes).toHaveLength(6);
    expect(writes.find((w) => w.key.sk === ws.sk)).toEqual({ key: ws, amounts: amounts(50, 350), ttl: 149 });
    for (let m = 0; m < 5; m++) expect(writes.find((w) => w.key.sk === model(m).sk)!.amounts).toEqual(amounts(10, 70));
  });

  it('resolves a caller only once its own increments are written; arrivals during a flush share the next one', async () => {
    const { writes, add, hold } = recordingWriter();
    let release!: () => void;
    hold(new Promise<void>((r) => (release = r)));
    let firstDone = false;
    const first = add([ws], amounts(1), 1).then(() => (firstDone = true));
    await new Promise((r) => setImmediate(r)); // the first flush has started and waits on the gate
    const later = Array.from({ length: 10 }, () => add([ws], amounts(1), 1));
    await new Promise((r) => setTimeout(r, 20));
    expect(firstDone).toBe(false);
    expect(writes).toHaveLength(0);
    release();
    await Promise.all([first, ...later]);
    expect(writes.map((w) => w.amounts.requests)).toEqual([1, 10]);
  });

  it('a failed write fails the callers of that flush, not the next one', async () => {
    let fail = true;
    const writes: number[] = [];
    const add = counterWriter('usage', async (_table, item) => {
      if (fail) throw new Error('throttled');
      writes.push(item.amounts.requests);
    });
    await expect(add([ws], amounts(1), 1)).rejects.toThrow('throttled');
    fail = false;
    await add([ws], amounts(2), 1);
    expect(writes).toEqual([2]);
  });

  describe('in a process serving many invocations at once', () => {
    // Two invocations running: each caller's increments are left to the process.
    beforeEach(() => {
      invocations.invocationStarted();
      invocations.invocationStarted();
    });
    afterEach(async () => {
      vi.useRealTimers();
      await invocations.invocationEnded();
      await invocations.invocationEnded();
    });

    it('callers do not wait; each counter is written once per second with everything that arrived', async () => {
      vi.useFakeTimers();
      const { writes, add } = recordingWriter();
      for (let i = 0; i < 30; i++) await add([ws, model(i % 3)], amounts(1, 5), 100);
      await vi.advanceTimersByTimeAsync(invocations.HOLD_MS - 1);
      expect(writes).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(writes).toHaveLength(4);
      expect(writes.find((w) => w.key.sk === ws.sk)!.amounts).toEqual(amounts(30, 150));
      await add([ws], amounts(1, 5), 100);
      await vi.advanceTimersByTimeAsync(invocations.HOLD_MS);
      expect(writes.map((w) => w.amounts.requests)).toEqual([30, 10, 10, 10, 1]);
    });

    it('the invocation that leaves the process idle writes what is held, and waits for it', async () => {
      const { writes, add } = recordingWriter();
      await add([ws], amounts(4, 2), 100);
      await invocations.invocationEnded();
      expect(writes).toHaveLength(0);
      await invocations.invocationEnded(); // idle now
      expect(writes.map((w) => w.amounts.requests)).toEqual([4]);
      invocations.invocationStarted();
      invocations.invocationStarted();
    });

    it('a failed write of held increments is logged (nobody awaits it)', async () => {
      const errors = vi.spyOn(log, 'error').mockImplementation(() => undefined);
      try {
        const add = counterWriter('usage', async () => {
          throw new Error('throttled');
        });
        await add([ws], amounts(1), 1);
        await invocations.writeHeld();
        expect(errors).toHaveBeenCalledWith('spend counters not written', expect.objectContaining({ counters: 1, error: 'Error: throttled' }));
      } finally {
        errors.mockRestore();
      }
    });
  });
});
