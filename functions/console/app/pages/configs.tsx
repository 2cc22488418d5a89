import { useState } from 'preact/hooks';
import { api, type Row } from '../api';
import { ErrorNote, Table, useLoad, when } from '../ui';
import { JsonEditor } from './json-editor';

const EXAMPLE = {
  name: 'fallback',
  slug: 'fallback',
  config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@my-openai' }, { provider: '@my-anthropic' }] },
};

export function Configs() {
  const list = useLoad(() => api('GET', '/configs?limit=100'));
  const [editing, setEditing] = useState<Row | null>(null);
  return (
    <div>
      <ErrorNote error={list.error} />
      <Table
        caption="Saved configs"
        rows={(list.data?.data as Row[]) ?? []}
        columns={[
          { label: 'Name', value: (c) => c.name },
          { label: 'Slug', value: (c) => c.slug },
          { label: 'Updated', value: (c) => when(c.updated_at ?? c.created_at) },
          {
            label: 'Edit',
            value: (c) => (
              <button type="button" onClick={() => setEditing(c)}>
                Edit {c.slug ?? c.id}
              </button>
            ),
          },
        ]}
      />
      {editing ? (
        <JsonEditor
          key={editing.id}
          label={`Config ${editing.slug ?? editing.id} (PUT /v1/configs/${editing.id})`}
          method="PUT"
          path={`/configs/${encodeURIComponent(editing.id)}`}
          initial={{ name: editing.name, config: editing.config }}
          onSaved={() => {
            setEditing(null);
            list.reload();
          }}
        />
      ) : (
        <JsonEditor label="New config (POST /v1/configs)" method="POST" path="/configs" initial={EXAMPLE} onSaved={list.reload} />
      )}
    </div>
  );
}
