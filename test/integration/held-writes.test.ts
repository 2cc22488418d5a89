import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { startOpenAIFake, type FakeServer } from '../fakes';
import { call, startTestGateway } from '../support/gateway';

// Writes that concurrent requests of one process share (EMF metric values, spend counters)
// are held while other invocations run and written together, by a timer or by the
// invocation that leaves the process idle (functions/shared/telemetry/invocations.ts). The
// local runtime serves many invocations at once in this process, as Lambda Managed
// Instances do: every request must still be counted, exactly once.

let gw: LocalGateway;
let fake: FakeServer;
let key: { id: string; secret: string };
const startedAt = Math.floor(Date.now() / 1000);

beforeAll(async () => {
  fake = await startOpenAIFake({ latencyMs: 200 });
  gw = await startTestGateway({ env: { POWERTOOLS_METRICS_DISABLED: 'false' } });
  const created = await call(gw, 'POST', '/v1/api-keys', { body: { name: 'held writes', scopes: ['gateway'] } });
  key = { id: created.body.id, secret: created.body.secret };
});
afterAll(async () => {
  await gw?.stop();
  await fake?.close();
});

type Emf = Record<string, unknown> & { _aws: { CloudWatchMetrics: Array<{ Metrics: Array<{ Name: string }> }> } };
const values = (doc: Emf, name: string): number[] => {
  const v = doc[name];
  return v === undefined ? [] : Array.isArray(v) ? v : [v as number];
};

describe('a process serving many requests at once', () => {
  it('counts every request exactly once in the metrics (fewer, larger EMF documents) and in the spend counters', async () => {
    let out = '';
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out += String(chunk);
      return true;
    });
    const n = 40;
    try {
      const statuses = await Promise.all(
        Array.from({ length: n }, async (_, i) => {
          const res = await fetch(`${gw.url}/v1/chat/completions`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'x-gateway-api-key': key.secret,
              'x-gateway-provider': 'openai',
              'x-gateway-custom-host': `${fake.url}/v1`,
              authorization: 'Bearer sk-x',
            },
            body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `question ${i}` }] }),
          });
          await res.arrayBuffer();
          return res.status;
        }),
      );
      expect(statuses.every((s) => s === 200)).toBe(true);
      // The last invocation writes what is held once its after-response work is done.
      const docs = () =>
        out
          .split('\n')
          .filter((l) => l.includes('"CloudWatchMetrics"') && l.includes('"chat.completions"'))
          .map((l) => JSON.parse(l) as Emf);
      for (let i = 0; i < 50 && docs().reduce((sum, d) => sum + values(d, 'Requests').length, 0) < n; i++) await new Promise((r) => setTimeout(r, 100));
      const written = docs();
      expect(written.reduce((sum, d) => sum + values(d, 'Requests').length, 0)).toBe(n);
      expect(written.reduce((sum, d) => sum + values(d, 'Latency').length, 0)).toBe(n);
      expect(written.reduce((sum, d) => sum + values(d, 'PromptTokens').reduce((a, b) => a + b, 0), 0)).toBeGreaterThan(0);
      expect(written.length).toBeLessThan(n / 2);
      const costs = out.split('\n').filter((l) => l.includes('"CostUSD"'));
      expect(costs.reduce((sum, l) => sum + values(JSON.parse(l) as Emf, 'CostUSD').length, 0)).toBe(n);
    } finally {
      spy.mockRestore();
    }

    let report = await call(gw, 'GET', `/v1/analytics/spend?group_by=api_key&from=${startedAt - 3600}&to=${startedAt + 7200}`, { key: gw.adminKey });
    for (let i = 0; i < 50 && (report.body.totals?.requests ?? 0) < n; i++) {
      await new Promise((r) => setTimeout(r, 100));
      report = await call(gw, 'GET', `/v1/analytics/spend?group_by=api_key&from=${startedAt - 3600}&to=${startedAt + 7200}`, { key: gw.adminKey });
    }
    expect(report.status).toBe(200);
    // This key's requests (the admin's own calls above go to other keys' counters).
    const mine = report.body.data.filter((row: { group: string | null }) => row.group === key.id);
    expect(mine.reduce((sum: number, row: { requests: number }) => sum + row.requests, 0)).toBe(n);
  }, 60_000);
});
