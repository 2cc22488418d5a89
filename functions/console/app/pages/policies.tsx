import { api, type Row } from '../api';
import { Bar, ErrorNote, Table, usd, useLoad } from '../ui';
import { JsonEditor } from './json-editor';

const DAY = 86_400;

/** Where a budget's current period began (UTC), as its enforcement counts it. */
function periodStart(period: string, now = new Date()): number {
  const day = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) / 1000;
  if (period === 'day') return day;
  if (period === 'week') return day - ((now.getUTCDay() + 6) % 7) * DAY;
  if (period === 'month') return Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1) / 1000;
  return 0;
}

/**
 * A budget's use this period, where the spend report can say it: a budget on one key (its
 * only condition `api_key`, no group_by) is that key's cost since the period began.
 */
function BudgetUse({ budget }: { budget: Row }) {
  const conditions = (budget.conditions as Row[]) ?? [];
  const key = conditions.length === 1 && conditions[0]!.key === 'api_key' && !(budget.group_by as Row[] | undefined)?.length ? conditions[0]!.value : null;
  const from = periodStart(budget.period);
  const report = useLoad(
    () => (key && budget.period !== 'total' ? api('GET', `/analytics/spend?group_by=api_key&from=${from}`) : Promise.resolve(null)),
    [key, from],
  );
  if (!key || budget.period === 'total') return <span class="muted">per group; see the overview</span>;
  const spent = ((report.data?.data as Row[]) ?? []).filter((r) => r.group === key).reduce((sum, r) => sum + r.cost_usd, 0);
  return <Bar label={budget.name ?? budget.id} value={spent} max={budget.limit_usd} text={`${usd(spent)} of ${usd(budget.limit_usd)}`} />;
}

export function Policies() {
  const limits = useLoad(() => api('GET', '/policies/rate-limits?page_size=100'));
  const budgets = useLoad(() => api('GET', '/policies/budgets?limit=100'));
  const conditions = (p: Row) =>
    [...((p.conditions as Row[]) ?? []).map((c) => `${c.key}=${c.value}`), ...((p.group_by as Row[]) ?? []).map((g) => `per ${g.key}`)].join(', ') ||
    'all requests';
  return (
    <div>
      <h2>Rate limits</h2>
      <ErrorNote error={limits.error} />
      <Table
        caption="Rate limits"
        rows={(limits.data?.data as Row[]) ?? []}
        columns={[
          { label: 'Name', value: (p) => p.name ?? p.id },
          { label: 'Applies to', value: conditions },
          { label: 'Limit', value: (p) => `${p.value} ${p.type} / ${p.unit}` },
          { label: 'Status', value: (p) => p.status ?? '' },
        ]}
      />
      <JsonEditor
        label="New rate limit (POST /v1/policies/rate-limits)"
        method="POST"
        path="/policies/rate-limits"
        initial={{ name: 'per user', type: 'requests', unit: 'rpm', value: 60, group_by: [{ key: 'metadata._user' }] }}
        onSaved={limits.reload}
      />
      <h2>Budgets</h2>
      <ErrorNote error={budgets.error} />
      <Table
        caption="Budgets"
        rows={(budgets.data?.data as Row[]) ?? []}
        columns={[
          { label: 'Name', value: (p) => p.name ?? p.id },
          { label: 'Applies to', value: conditions },
          { label: 'Limit', value: (p) => `${usd(p.limit_usd)} / ${p.period}` },
          { label: 'Use this period', value: (p) => <BudgetUse budget={p} /> },
        ]}
      />
      <JsonEditor
        label="New budget (POST /v1/policies/budgets)"
        method="POST"
        path="/policies/budgets"
        initial={{ type: 'budget', name: 'team', limit_usd: 50, period: 'month', conditions: [{ key: 'workspace_id', value: 'ws_...' }] }}
        onSaved={budgets.reload}
      />
    </div>
  );
}
