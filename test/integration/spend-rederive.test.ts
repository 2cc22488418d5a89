import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { call, startTestGateway } from '../support/gateway';

// After a crash, the local runtime sets the spend counters of the hours in which the dead
// gateway was last alive to what the stored request-log records add up to
// (functions/spend/rederive.ts): the spend report then counts every stored record once,
// and leaves other hours alone, including hours whose records may have expired.

type Ops = typeof import('../../functions/shared/db/ops');
let gw: LocalGateway;
let ops: Ops;
let rederive: typeof import('../../functions/spend/rederive').rederiveSpendCounters;
let requestLogItem: typeof import('../../functions/gateway/request-log').requestLogItem;

beforeAll(async () => {
  gw = await startTestGateway();
  ops = await import('../../functions/shared/db/ops');
  ({ rederiveSpendCounters: rederive } = await import('../../functions/spend/rederive'));
  ({ requestLogItem } = await import('../../functions/gateway/request-log'));
});
afterAll(async () => {
  await gw?.stop();
});

const HOUR = 3600;
const hourLabel = (s: number) => new Date(s * 1000).toISOString().slice(0, 13);

function record(workspaceId: string, id: string, createdAt: number) {
  return {
    object: 'request_log' as const,
    id,
    trace_id: id,
    workspace_id: workspaceId,
    organisation_id: gw.organisationId,
    api_key_id: 'key_rederive',
    method: 'POST',
    path: '/v1/chat/completions',
    route: 'chat.completions',
    provider: 'openai',
    managed_provider: null,
    model: 'gpt-4o-mini',
    status: 200,
    stream: false,
    latency_ms: 1,
    upstream_latency_ms: 1,
    usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    cache_status: null,
    retry_count: 0,
    attempts: [],
    metadata: {},
    error: null,
    cost_usd: 0.002,
    price_source: 'catalogue' as const,
    pricing_unknown: false,
    created_at: createdAt,
  };
}

describe('spend counters re-derived from the records', () => {
  it('sets the counters of the given hours to the sums of their records, and leaves other hours and expired hours alone', async () => {
    const ws = await call(gw, 'POST', '/v1/workspaces', { body: { name: `rederive ${Date.now()}` } });
    expect(ws.status).toBe(200);
    const workspaceId: string = ws.body.id;
    const cellPk = `WS#${workspaceId}#SPEND#cell`;
    const cellSk = (s: number) => `${hourLabel(s)}#${JSON.stringify(['key_rederive', 'openai', 'gpt-4o-mini'])}`;
    const now = Math.floor(Date.now() / 1000);
    const crashHour = Math.floor(now / HOUR) * HOUR - 3 * HOUR;
    // The dead gateway stored three records in its last hour and counted one of them.
    for (const [i, at] of [crashHour + 10, crashHour + 20, crashHour + 30].entries()) {
      await ops.putItem('logs', requestLogItem(record(workspaceId, `log_rederive_${i}`, at)));
    }
    await ops.updateItem('usage', { pk: cellPk, sk: cellSk(crashHour) }, { set: { requests: 1, cost_nano_usd: 2_000_000 } });
    // Counters are sharded: it had counted another on shard 5 (`WS#<ws>#SPEND#5#cell`).
    const shard5Pk = `WS#${workspaceId}#SPEND#5#cell`;
    await ops.updateItem('usage', { pk: shard5Pk, sk: cellSk(crashHour) }, { set: { requests: 1, cost_nano_usd: 2_000_000 } });
    // A later hour with a counter but no record in reach; an hour past the records' TTL (30
    // days) whose counter outlives its records: 9 requests, of which one record is left.
    await ops.updateItem('usage', { pk: cellPk, sk: cellSk(now) }, { set: { requests: 5 } });
    const expired = now - 40 * 86_400;
    await ops.updateItem('usage', { pk: cellPk, sk: cellSk(expired) }, { set: { requests: 9 } });
    await ops.putItem('logs', requestLogItem(record(workspaceId, 'log_rederive_left', expired)));

    await rederive(crashHour + 25, crashHour + 35);
    await rederive(expired, expired + 10);

    const cell = await ops.getItem<Record<string, number>>('usage', { pk: cellPk, sk: cellSk(crashHour) });
    expect(cell).toMatchObject({ requests: 3, prompt_tokens: 9, completion_tokens: 12, total_tokens: 21, cost_nano_usd: 6_000_000, unpriced_requests: 0 });
    // The sum is in shard 0; the other shards of the hour are gone, so the shards add up to the records.
    expect(await ops.getItem('usage', { pk: shard5Pk, sk: cellSk(crashHour) })).toBeUndefined();
    expect((await ops.getItem<{ requests: number }>('usage', { pk: cellPk, sk: cellSk(now) }))?.requests).toBe(5);
    expect((await ops.getItem<{ requests: number }>('usage', { pk: cellPk, sk: cellSk(expired) }))?.requests).toBe(9);

    // Idempotent: a start that dies while re-deriving does it again on the next start.
    await rederive(crashHour + 25, crashHour + 35);
    expect((await ops.getItem<{ requests: number }>('usage', { pk: cellPk, sk: cellSk(crashHour) }))?.requests).toBe(3);
  });
});
