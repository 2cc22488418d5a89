import { useState } from 'preact/hooks';
import { api, type Row } from '../api';
import { ErrorNote, Field, Table, useAction, useLoad, when } from '../ui';

/** Managed providers: credentials are sent once and never shown (the API never returns them). */
export function Providers() {
  const list = useLoad(() => api('GET', '/providers?limit=100'));
  const catalog = useLoad(() => api('GET', '/providers/catalog'));
  const [form, setForm] = useState({ slug: '', provider: 'openai', name: '', custom_host: '', api_key: '' });
  const create = useAction();
  const remove = useAction();
  const set = (name: keyof typeof form) => (e: { currentTarget: HTMLInputElement | HTMLSelectElement }) => setForm({ ...form, [name]: e.currentTarget.value });
  return (
    <div>
      <form
        class="card"
        onSubmit={(e) => {
          e.preventDefault();
          void create.run(async () => {
            await api('POST', '/providers', {
              slug: form.slug,
              provider: form.provider,
              ...(form.name ? { name: form.name } : {}),
              ...(form.custom_host ? { custom_host: form.custom_host } : {}),
              ...(form.api_key ? { api_key: form.api_key } : {}),
            });
            setForm({ ...form, slug: '', name: '', custom_host: '', api_key: '' });
            list.reload();
          });
        }}
      >
        <h2>Store a provider</h2>
        <Field label="Slug" hint="Requests name it as x-gateway-provider: @slug">
          <input name="slug" required value={form.slug} onInput={set('slug')} />
        </Field>
        <Field label="Provider">
          <select name="provider" value={form.provider} onChange={set('provider')}>
            {((catalog.data?.data as Row[]) ?? [{ slug: 'openai', name: 'OpenAI' }]).map((p) => (
              <option key={p.slug} value={p.slug}>
                {p.name} ({p.slug})
              </option>
            ))}
          </select>
        </Field>
        <Field label="Name (optional)">
          <input name="name" value={form.name} onInput={set('name')} />
        </Field>
        <Field label="Custom host (optional)">
          <input name="custom_host" type="url" value={form.custom_host} onInput={set('custom_host')} />
        </Field>
        <Field label="API key" hint="Stored encrypted; never shown again.">
          <input name="api_key" type="password" autoComplete="off" value={form.api_key} onInput={set('api_key')} />
        </Field>
        <button type="submit" disabled={create.busy}>
          Store provider
        </button>
        <ErrorNote error={create.error} />
      </form>
      <ErrorNote error={list.error ?? remove.error} />
      <Table
        caption="Managed providers"
        rows={(list.data?.data as Row[]) ?? []}
        columns={[
          { label: 'Slug', value: (p) => p.slug },
          { label: 'Provider', value: (p) => p.provider },
          { label: 'Custom host', value: (p) => p.custom_host ?? '—' },
          { label: 'Created', value: (p) => when(p.created_at) },
          {
            label: 'Delete',
            value: (p) => (
              <button
                type="button"
                onClick={() =>
                  void remove.run(async () => {
                    await api('DELETE', `/providers/${encodeURIComponent(p.slug)}`);
                    list.reload();
                  })
                }
              >
                Delete {p.slug}
              </button>
            ),
          },
        ]}
      />
    </div>
  );
}
