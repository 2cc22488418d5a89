import { useState } from 'preact/hooks';
import { api, type Row } from '../api';
import { ErrorNote, Field, Table, useAction, useLoad, when } from '../ui';

const ROLES = ['member', 'viewer', 'workspace-admin', 'org-admin'];

/** Budgets and rate limits of one key are policies with the condition `api_key = <id>`. */
async function keyPolicies(keyId: string, budgetUsd: string, rpm: string) {
  const conditions = [{ key: 'api_key', value: keyId }];
  if (Number(budgetUsd) > 0)
    await api('POST', '/policies/budgets', { type: 'budget', name: `key ${keyId}`, limit_usd: Number(budgetUsd), period: 'month', conditions });
  if (Number(rpm) >= 1) await api('POST', '/policies/rate-limits', { name: `key ${keyId}`, type: 'requests', unit: 'rpm', value: Number(rpm), conditions });
}

export function Keys() {
  const list = useLoad(() => api('GET', '/api-keys?limit=100'));
  const [form, setForm] = useState({ name: '', role: 'member', gateway: true, budget: '', rpm: '' });
  const [created, setCreated] = useState<Row | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  const create = useAction();
  const revoke = useAction();
  return (
    <div>
      <form
        class="card"
        onSubmit={(e) => {
          e.preventDefault();
          void create.run(async () => {
            const key = await api('POST', '/api-keys', { name: form.name, role: form.role, scopes: form.gateway ? ['gateway'] : [] });
            await keyPolicies(key.id, form.budget, form.rpm);
            setCreated(key);
            list.reload();
          });
        }}
      >
        <h2>Create a key</h2>
        <Field label="Name">
          <input name="name" required value={form.name} onInput={(e) => setForm({ ...form, name: e.currentTarget.value })} />
        </Field>
        <Field label="Role">
          <select name="role" value={form.role} onChange={(e) => setForm({ ...form, role: e.currentTarget.value })}>
            {ROLES.map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
        </Field>
        <label class="check">
          <input type="checkbox" checked={form.gateway} onChange={(e) => setForm({ ...form, gateway: e.currentTarget.checked })} /> Model traffic (the{' '}
          <code>gateway</code> scope)
        </label>
        <Field label="Monthly budget (USD, optional)">
          <input name="budget" type="number" min="0" step="any" value={form.budget} onInput={(e) => setForm({ ...form, budget: e.currentTarget.value })} />
        </Field>
        <Field label="Requests per minute (optional)">
          <input name="rpm" type="number" min="1" value={form.rpm} onInput={(e) => setForm({ ...form, rpm: e.currentTarget.value })} />
        </Field>
        <button type="submit" disabled={create.busy}>
          Create key
        </button>
        <ErrorNote error={create.error} />
      </form>
      {created ? (
        <div class="secret" role="status">
          <h2>Key {created.name} created</h2>
          <p>Copy the secret now: it is shown this once and cannot be read again.</p>
          <output data-testid="new-secret">{created.secret}</output>
          <button type="button" onClick={() => setCreated(null)}>
            I have copied it
          </button>
        </div>
      ) : null}
      <ErrorNote error={list.error ?? revoke.error} />
      <Table
        caption="API keys"
        rows={(list.data?.data as Row[]) ?? []}
        columns={[
          { label: 'Name', value: (k) => k.name },
          { label: 'Id', value: (k) => k.id },
          { label: 'Role', value: (k) => k.role },
          { label: 'Scopes', value: (k) => (k.scopes as string[]).join(', ') },
          { label: 'Status', value: (k) => k.status ?? (k.revoked_at ? 'revoked' : 'active') },
          { label: 'Created', value: (k) => when(k.created_at) },
          {
            label: 'Revoke',
            value: (k) =>
              confirming === k.id ? (
                <button
                  type="button"
                  class="danger"
                  onClick={() =>
                    void revoke.run(async () => {
                      await api('DELETE', `/api-keys/${encodeURIComponent(k.id)}`);
                      setConfirming(null);
                      list.reload();
                    })
                  }
                >
                  Confirm revoking {k.name}
                </button>
              ) : (
                <button type="button" onClick={() => setConfirming(k.id)}>
                  Revoke {k.name}
                </button>
              ),
          },
        ]}
      />
    </div>
  );
}
