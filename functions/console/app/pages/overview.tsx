import { useMemo, useState } from 'preact/hooks';
import { api, type Row } from '../api';
import { ErrorNote, Field, Table, usd, useLoad } from '../ui';
import { LineChart } from './chart';

const DAY = 86_400;

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? null;
}

/** Per day (oldest first), one value per day of the range even when nothing happened. */
function byDay(rows: Row[], from: number, days: number, field: string): { x: number[]; values: number[] } {
  const x = Array.from({ length: days }, (_, i) => from + i * DAY);
  const values = x.map(() => 0);
  for (const row of rows) {
    const i = Math.floor((Date.parse(row.period_start) / 1000 - from) / DAY);
    if (i >= 0 && i < days) values[i]! += Number(row[field] ?? 0);
  }
  return { x, values };
}

function SpendBy({ group, from, title }: { group: string; from: number; title: string }) {
  const report = useLoad(() => api('GET', `/analytics/spend?group_by=${group}&from=${from}`), [group, from]);
  if (report.error) return <ErrorNote error={report.error} />;
  const totals = new Map<string, Row>();
  for (const row of (report.data?.data as Row[]) ?? []) {
    const name = String(row.group ?? '(none)');
    const t = totals.get(name) ?? { id: name, group: name, requests: 0, total_tokens: 0, cost_usd: 0 };
    t.requests += row.requests;
    t.total_tokens += row.total_tokens;
    t.cost_usd += row.cost_usd;
    totals.set(name, t);
  }
  return (
    <section>
      <h2>{title}</h2>
      <Table
        caption={title}
        rows={[...totals.values()].sort((a, b) => b.cost_usd - a.cost_usd)}
        columns={[
          { label: group === 'api_key' ? 'Key' : group === 'metadata._user' ? 'User' : 'Model', value: (r) => r.group },
          { label: 'Requests', value: (r) => r.requests },
          { label: 'Tokens', value: (r) => r.total_tokens },
          { label: 'Cost', value: (r) => usd(r.cost_usd) },
        ]}
      />
    </section>
  );
}

export function Overview() {
  const [days, setDays] = useState(14);
  const from = useMemo(() => Math.floor(Date.now() / 1000 / DAY) * DAY - (days - 1) * DAY, [days]);
  const spend = useLoad(() => api('GET', `/analytics/spend?group_by=workspace&from=${from}`), [from]);
  const logs = useLoad(() => api('GET', `/logs?limit=100&from=${from}`), [from]);
  const perDay = useMemo(() => {
    const rows = (spend.data?.data as Row[]) ?? [];
    const cost = byDay(rows, from, days, 'cost_usd');
    const requests = byDay(rows, from, days, 'requests');
    return {
      x: cost.x,
      cost: [{ label: 'Cost (USD)', values: cost.values, color: '#1f5fa8' }],
      requests: [{ label: 'Requests', values: requests.values, color: '#2b7a3d' }],
    };
  }, [spend.data, from, days]);
  const records = (logs.data?.data as Row[]) ?? [];
  const latencies = records.map((r) => Number(r.latency_ms)).sort((a, b) => a - b);
  const errors = records.filter((r) => r.status >= 400).length;
  const totals = spend.data?.totals as Row | undefined;
  return (
    <div>
      <Field label="Days shown">
        <select value={days} onChange={(e) => setDays(Number(e.currentTarget.value))}>
          {[7, 14, 30].map((d) => (
            <option key={d} value={d}>
              {d} days
            </option>
          ))}
        </select>
      </Field>
      <ErrorNote error={spend.error ?? logs.error} />
      <dl class="stats">
        <div>
          <dt>Requests</dt>
          <dd data-testid="total-requests">{totals?.requests ?? '…'}</dd>
        </div>
        <div>
          <dt>Cost</dt>
          <dd data-testid="total-cost">{totals ? usd(totals.cost_usd) : '…'}</dd>
        </div>
        <div>
          <dt>Errors (last {records.length} requests)</dt>
          <dd>{errors}</dd>
        </div>
        <div>
          <dt>Latency p50 / p95 / p99</dt>
          <dd>{[50, 95, 99].map((p) => `${percentile(latencies, p) ?? '–'} ms`).join(' / ')}</dd>
        </div>
      </dl>
      <div class="charts">
        <LineChart title="Cost per day (USD)" x={perDay.x} series={perDay.cost} />
        <LineChart title="Requests per day" x={perDay.x} series={perDay.requests} />
      </div>
      <SpendBy group="model" from={from} title="Cost by model" />
      <SpendBy group="api_key" from={from} title="Cost by key" />
      <SpendBy group="metadata._user" from={from} title="Cost by user" />
    </div>
  );
}
