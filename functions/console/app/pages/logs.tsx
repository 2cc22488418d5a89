import { useState } from 'preact/hooks';
import { api, type Row } from '../api';
import { ErrorNote, Field, JsonText, Table, usd, useLoad, when } from '../ui';

interface Filters {
  from: string;
  to: string;
  status: string;
  provider: string;
  model: string;
  key: string;
  metadata: string;
}

const EMPTY: Filters = { from: '', to: '', status: '', provider: '', model: '', key: '', metadata: '' };
const seconds = (local: string) => String(Math.floor(new Date(local).getTime() / 1000));

/** The API's filters as a query; `key=value` pairs of metadata become `metadata.<key>=<value>`. */
function query(f: Filters): string {
  const q = new URLSearchParams({ limit: '100' });
  if (f.from) q.set('from', seconds(f.from));
  if (f.to) q.set('to', seconds(f.to));
  for (const name of ['status', 'provider', 'model'] as const) if (f[name].trim()) q.set(name, f[name].trim());
  if (f.key.trim()) q.set('api_key_id', f.key.trim());
  for (const pair of f.metadata.split(',')) {
    const at = pair.indexOf('=');
    if (at > 0) q.set(`metadata.${pair.slice(0, at).trim()}`, pair.slice(at + 1).trim());
  }
  return q.toString();
}

function Detail({ id, onClose }: { id: string; onClose: () => void }) {
  const record = useLoad(() => api('GET', `/logs/${encodeURIComponent(id)}`), [id]);
  if (record.error) return <ErrorNote error={record.error} />;
  const r = record.data;
  if (!r) return <p aria-busy="true">Loading…</p>;
  const guardrails = Object.entries(r).filter(([name]) => /guardrail|hook_results/.test(name));
  return (
    <section class="detail" aria-labelledby="detail-title">
      <h2 id="detail-title">Request {r.id}</h2>
      <button type="button" onClick={onClose}>
        Close
      </button>
      <dl class="facts">
        <dt>Trace id</dt>
        <dd>{r.trace_id}</dd>
        <dt>Route</dt>
        <dd>{r.route}</dd>
        <dt>Status</dt>
        <dd>{r.status}</dd>
        <dt>Provider / model</dt>
        <dd>
          {r.provider ?? '—'} / {r.model ?? '—'}
        </dd>
        <dt>Cost</dt>
        <dd>{usd(r.cost_usd)}</dd>
        <dt>Latency</dt>
        <dd>
          {r.latency_ms} ms (upstream {r.upstream_latency_ms ?? '—'} ms)
        </dd>
        <dt>Error</dt>
        <dd>{r.error ?? '—'}</dd>
      </dl>
      <h3>Routing attempts</h3>
      <Table
        caption="Routing attempts"
        rows={(r.attempts as Row[]) ?? []}
        empty="No attempts recorded."
        columns={[
          { label: 'Provider', value: (a) => a.provider },
          { label: 'Model', value: (a) => a.model },
          { label: 'Status', value: (a) => a.status },
          { label: 'Latency', value: (a) => (a.latency_ms === undefined ? '' : `${a.latency_ms} ms`) },
          { label: 'Error', value: (a) => a.error ?? '' },
        ]}
      />
      <h3>Guardrail verdicts</h3>
      {guardrails.length ? guardrails.map(([name, value]) => <JsonText key={name} value={{ [name]: value }} />) : <p class="muted">No guardrail ran.</p>}
      <h3>Record</h3>
      <JsonText value={r} />
    </section>
  );
}

export function Logs() {
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const [open, setOpen] = useState<string | null>(null);
  const list = useLoad(() => api('GET', `/logs?${query(filters)}`), [filters]);
  const rows = (list.data?.data as Row[]) ?? [];
  const input = (name: keyof Filters, label: string, type = 'text', hint?: string) => (
    <Field label={label} {...(hint ? { hint } : {})}>
      <input type={type} name={name} value={draft[name]} onInput={(e) => setDraft({ ...draft, [name]: e.currentTarget.value })} />
    </Field>
  );
  return (
    <div>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters(draft);
        }}
      >
        {input('from', 'From', 'datetime-local')}
        {input('to', 'To', 'datetime-local')}
        {input('status', 'Status', 'number')}
        {input('provider', 'Provider')}
        {input('model', 'Model')}
        {input('key', 'Key id')}
        {input('metadata', 'Metadata', 'text', 'key=value, comma separated (an indexed key such as _user first)')}
        <button type="submit">Filter</button>
      </form>
      <ErrorNote error={list.error} />
      <Table
        caption="Requests, newest first"
        rows={rows}
        empty="No request matches."
        columns={[
          { label: 'Time (UTC)', value: (r) => when(r.created_at) },
          { label: 'Status', value: (r) => r.status },
          { label: 'Route', value: (r) => r.route },
          { label: 'Provider', value: (r) => r.provider ?? '—' },
          { label: 'Model', value: (r) => r.model ?? '—' },
          { label: 'Key', value: (r) => r.api_key_id },
          { label: 'Latency', value: (r) => `${r.latency_ms} ms` },
          { label: 'Cost', value: (r) => usd(r.cost_usd) },
          {
            label: 'Detail',
            value: (r) => (
              <button type="button" onClick={() => setOpen(r.id)} aria-label={`Open request ${r.id}`}>
                Open
              </button>
            ),
          },
        ]}
      />
      {open ? <Detail id={open} onClose={() => setOpen(null)} /> : null}
    </div>
  );
}
