import { api, type Row } from '../api';
import { ErrorNote, Table, useLoad, when } from '../ui';
import { JsonEditor } from './json-editor';

const EXAMPLE = { name: 'no-secrets', checks: [{ id: 'default.regexMatch', parameters: { rule: 'sk-[A-Za-z0-9]{20,}' } }], actions: { onFail: 'block' } };

export function Guardrails() {
  const list = useLoad(() => api('GET', '/guardrails?limit=100'));
  return (
    <div>
      <ErrorNote error={list.error} />
      <Table
        caption="Guardrails"
        rows={(list.data?.data as Row[]) ?? []}
        columns={[
          { label: 'Name', value: (g) => g.name },
          { label: 'Id', value: (g) => g.id },
          { label: 'Checks', value: (g) => ((g.checks as Row[]) ?? []).map((c) => c.id).join(', ') },
          { label: 'On fail', value: (g) => g.actions?.onFail },
          { label: 'Version', value: (g) => g.version ?? '' },
          { label: 'Updated', value: (g) => when(g.updated_at ?? g.created_at) },
        ]}
      />
      <JsonEditor label="New guardrail (POST /v1/guardrails)" method="POST" path="/guardrails" initial={EXAMPLE} onSaved={list.reload} />
    </div>
  );
}
