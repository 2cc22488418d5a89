import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import type { ActiveBudget, BudgetBucket } from '../../functions/policies/budget-model';
import type { BudgetCharge } from '../../functions/policies/budget-spend';
import type { JournaledRecord } from '../../functions/gateway/log-journal';
import { startTestGateway } from '../support/gateway';

// functions/ modules are imported after the gateway (and its tables) exist.
let gw: LocalGateway;
let ops: typeof import('../../functions/shared/db/ops');
let chargeBudgets: typeof import('../../functions/policies/budget-spend').chargeBudgets;
let LogJournal: typeof import('../../functions/gateway/log-journal').LogJournal;
let openPutJournal: typeof import('../../functions/shared/db/put-journal').openPutJournal;
let replayRequestLogJournal: typeof import('../../functions/gateway/request-log-replay').replayRequestLogJournal;
const dirs: string[] = [];

beforeAll(async () => {
  gw = await startTestGateway();
  ops = await import('../../functions/shared/db/ops');
  ({ chargeBudgets } = await import('../../functions/policies/budget-spend'));
  ({ LogJournal } = await import('../../functions/gateway/log-journal'));
  ({ openPutJournal } = await import('../../functions/shared/db/put-journal'));
  ({ replayRequestLogJournal } = await import('../../functions/gateway/request-log-replay'));
});
afterAll(async () => {
  await gw?.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const COST_USD = 0.001;

function budgetCounter(name: string): { bucket: BudgetBucket; key: { pk: string; sk: string } } {
  const budget: ActiveBudget = {
    id: `bud_${name}`,
    name,
    limitNusd: 1e15,
    limitUsd: 1e6,
    shardLimitUsd: 1e6,
    period: 'month',
    thresholds: [],
    conditions: [],
    groupBy: [],
  };
  const key = { pk: `TEST#replay#${name}#${Date.now()}`, sk: 'budget#2026-11' };
  return { bucket: { budget, ...key }, key };
}

const spentNusd = async (key: { pk: string; sk: string }) => Number((await ops.getItem<{ spent_nusd?: number }>('usage', key, true))?.spent_nusd ?? 0);

/** A stand-in for a request-log item: replay only reads its key. */
const logItem = (pk: string, sk: string, n?: number) => ({ pk, sk, ...(n === undefined ? {} : { n }) }) as unknown as JournaledRecord['item'];

function journalIn(dir: string) {
  return new LogJournal(openPutJournal(dir, 'logs'), dir);
}

/** What a dead process leaves: a copy of its journal folder, as `kill -9` finds it (nothing settled or swept). */
function copyOf(dir: string): string {
  const copy = mkdtempSync(join(tmpdir(), 'replay-copy-'));
  dirs.push(copy);
  cpSync(dir, copy, { recursive: true });
  return copy;
}

describe('request-log journal replay', () => {
  it('charges each record exactly once, whichever of its record write and group charge the crash cut, and again on a second replay', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'replay-'));
    dirs.push(dir);
    const { bucket, key } = budgetCounter('exact');
    const workspaceId = 'ws_replay';
    const charge: BudgetCharge = { grant: { buckets: [bucket], headers: {} }, costUsd: COST_USD, workspaceId };
    const logPk = `TEST#replay-logs#${Date.now()}`;
    const item = (n: number) => logItem(logPk, `log_${String(n).padStart(4, '0')}`, n);
    const journal = journalIn(dir);

    // Group A: its charge was applied, its records' write never happened.
    journal.record(item(1), charge);
    journal.record(item(2), charge);
    const a = journal.charge([item(1).sk, item(2).sk], 0)!;
    await chargeBudgets([charge, charge], a.marker);
    // Group B: its records were stored, its charge never reached DynamoDB.
    journal.record(item(3), charge);
    journal.record(item(4), charge);
    journal.charge([item(3).sk, item(4).sk], 1);
    await ops.putItem('logs', item(3));
    await ops.putItem('logs', item(4));
    // Group C: both were done.
    journal.record(item(5), charge);
    const c = journal.charge([item(5).sk], 0)!;
    await chargeBudgets([charge], c.marker);
    await ops.putItem('logs', item(5));
    // Records whose group was never sent (charged together, under the writer's last seq).
    journal.record(item(6), charge);
    // A record without a budget.
    journal.record(item(7), undefined);
    journal.record(item(8), charge);
    expect(await spentNusd(key)).toBe(3 * COST_USD * 1e9);

    // The first replay is cut short: its copy of the journal is replayed again afterwards.
    const again = copyOf(dir);
    expect(await replayRequestLogJournal(dir)).toEqual({ entries: 11, restored: 5 });
    expect(readdirSync(dir).filter((name) => name.endsWith('.jsonl'))).toEqual([]);
    expect(await spentNusd(key)).toBe(7 * COST_USD * 1e9);
    expect(await replayRequestLogJournal(again)).toEqual({ entries: 11, restored: 0 });
    expect(await spentNusd(key)).toBe(7 * COST_USD * 1e9);

    const stored = await ops.queryAll<{ n: number }>('logs', logPk, 'log_');
    expect(stored.map((s) => s.n)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('a later charge of the same writer and slot still applies after one the counter has seen', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'replay-'));
    dirs.push(dir);
    const { bucket, key } = budgetCounter('order');
    const charge: BudgetCharge = { grant: { buckets: [bucket], headers: {} }, costUsd: COST_USD, workspaceId: 'ws_replay' };
    const journal = journalIn(dir);
    journal.record(logItem('TEST#replay-order', 'log_a'), charge);
    const first = journal.charge(['log_a'], 3)!;
    await chargeBudgets([charge], first.marker);
    journal.record(logItem('TEST#replay-order', 'log_b'), charge);
    const second = journal.charge(['log_b'], 3)!;
    expect(second.marker.attr).toBe(first.marker.attr);
    expect(second.marker.seq > first.marker.seq).toBe(true);
    // Sent once live, then again (a retry of a write whose answer was lost): applied once.
    await chargeBudgets([charge], second.marker);
    await chargeBudgets([charge], second.marker);
    expect(await spentNusd(key)).toBe(2 * COST_USD * 1e9);
    await replayRequestLogJournal(dir);
    expect(await spentNusd(key)).toBe(2 * COST_USD * 1e9);
  });

  it('a live charge refused by a later seq it never sent (the clock went back since an earlier process) is charged all the same; a replayed one is not', async () => {
    const { bucket, key } = budgetCounter('clock');
    const charge: BudgetCharge = { grant: { buckets: [bucket], headers: {} }, costUsd: COST_USD, workspaceId: 'ws_replay' };
    const attr = 'cw_0_0_0';
    // An earlier process under the same attribute, whose clock was ahead.
    await ops.putItem('usage', { ...key, spent_nusd: 0, [attr]: '9'.repeat(27) });
    await chargeBudgets([charge], { attr, seq: `${String(Date.now()).padStart(15, '0')}000000000001` });
    expect(await spentNusd(key)).toBe(COST_USD * 1e9);
    await chargeBudgets([charge], { attr, seq: `${String(Date.now()).padStart(15, '0')}000000000002`, replay: true });
    expect(await spentNusd(key)).toBe(COST_USD * 1e9);
  });

  it('replays a journal written before charges carried markers: a record it stores is charged, one already stored is not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'replay-'));
    dirs.push(dir);
    const { bucket, key } = budgetCounter('legacy');
    const charge: BudgetCharge = { grant: { buckets: [bucket], headers: {} }, costUsd: COST_USD, workspaceId: 'ws_replay' };
    const legacy = openPutJournal(dir, 'logs');
    const pk = `TEST#replay-legacy#${Date.now()}`;
    legacy.append({ item: { pk, sk: 'log_1' }, charge });
    legacy.append({ item: { pk, sk: 'log_2' }, charge });
    await ops.putItem('logs', { pk, sk: 'log_2' });
    expect(await replayRequestLogJournal(dir)).toEqual({ entries: 2, restored: 1 });
    expect(await spentNusd(key)).toBe(COST_USD * 1e9);
  });
});
