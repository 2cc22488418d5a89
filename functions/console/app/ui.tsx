import { type ComponentChildren, cloneElement, type VNode } from 'preact';
import { useCallback, useEffect, useId, useState } from 'preact/hooks';
import { ApiError, api, type Row } from './api';

/** Loads with `load` whenever `deps` change; `reload` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[] = []) {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const run = useCallback(() => {
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => setState({ data, loading: false }),
      (error: unknown) => setState({ error, loading: false }),
    );
  }, deps);
  useEffect(run, [run]);
  return { ...state, reload: run };
}

/** An API error as the operator should read it; a 403 says which role the route needs (the API's message names it). */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  if (error instanceof ApiError) {
    const heading = error.status === 403 ? 'Not allowed for your role' : `Error ${error.status}`;
    return (
      <div class="error" role="alert">
        <strong>{heading}</strong>: {error.message}
        {error.param ? <span class="param"> (field: {error.param})</span> : null}
      </div>
    );
  }
  return (
    <div class="error" role="alert">
      {String((error as Error)?.message ?? error)}
    </div>
  );
}

export interface Column {
  label: string;
  value: (row: Row) => ComponentChildren;
}

export function Table({ caption, columns, rows, empty = 'Nothing yet.' }: { caption: string; columns: Column[]; rows: Row[]; empty?: string }) {
  if (rows.length === 0) return <p class="muted">{empty}</p>;
  return (
    <div class="table-wrap">
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c.label}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row, i) => (
            <tr key={String(row.id ?? i)}>
              {columns.map((c) => (
                <td key={c.label}>{c.value(row)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A page's list from one documented list route (`{object: "list", data}`). */
export function ListOf({ path, caption, columns, deps = [] }: { path: string; caption: string; columns: Column[]; deps?: unknown[] }) {
  const list = useLoad(() => api('GET', path), [path, ...deps]);
  if (list.error) return <ErrorNote error={list.error} />;
  if (list.loading && !list.data) return <p aria-busy="true">Loading…</p>;
  return <Table caption={caption} columns={columns} rows={(list.data?.data as Row[]) ?? []} />;
}

/** A labelled control: the label names it (`for`), and the hint describes it. */
export function Field({ label, children, hint }: { label: string; children: VNode<Record<string, unknown>>; hint?: string }) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {cloneElement(children, { id, ...(hint ? { 'aria-describedby': `${id}-hint` } : {}) })}
      {hint ? (
        <small class="muted" id={`${id}-hint`}>
          {hint}
        </small>
      ) : null}
    </div>
  );
}

/** Any JSON, shown as text (never as HTML). */
export const JsonText = ({ value }: { value: unknown }) => <pre class="json">{JSON.stringify(value, null, 2)}</pre>;

export const when = (seconds: unknown) => (typeof seconds === 'number' ? new Date(seconds * 1000).toISOString().replace('T', ' ').slice(0, 19) : '');

export const usd = (value: unknown) => (typeof value === 'number' ? `$${value.toFixed(value < 0.01 && value > 0 ? 6 : 4)}` : '—');

/** A bar of `value` out of `max`, with its figures as text beside it. */
export function Bar({ label, value, max, text }: { label: string; value: number; max: number; text: string }) {
  const share = max > 0 ? Math.min(1, value / max) : 0;
  return (
    <div class="bar-row">
      <span>{label}</span>
      <meter min={0} max={1} value={share} aria-label={`${label}: ${text}`} />
      <span>{text}</span>
    </div>
  );
}

/** A form's submit: runs `action`, shows its error inline, and tells the caller it succeeded. */
export function useAction() {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await action();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return { error, busy, run };
}
