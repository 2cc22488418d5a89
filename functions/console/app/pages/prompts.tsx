import { useState } from 'preact/hooks';
import { api, type Row, streamCompletion } from '../api';
import { ErrorNote, Field, JsonText, Table, useAction, useLoad, when } from '../ui';
import { diffLines } from './diff';

/** The template and settings of a version, as text to compare. */
const versionText = (v: Row) => `model: ${v.model}\nvirtual_key: ${v.virtual_key ?? ''}\nparameters: ${JSON.stringify(v.parameters ?? {})}\n${v.string ?? ''}`;

function Diff({ versions }: { versions: Row[] }) {
  const numbers = versions.map((v) => v.prompt_version as number);
  const [left, setLeft] = useState(numbers.at(-1) ?? 1);
  const [right, setRight] = useState(numbers[0] ?? 1);
  const a = versions.find((v) => v.prompt_version === left);
  const b = versions.find((v) => v.prompt_version === right);
  const pick = (value: number, set: (n: number) => void, label: string) => (
    <Field label={label}>
      <select value={value} onChange={(e) => set(Number(e.currentTarget.value))}>
        {numbers.map((n) => (
          <option key={n} value={n}>
            version {n}
          </option>
        ))}
      </select>
    </Field>
  );
  return (
    <section>
      <h3>Compare versions</h3>
      <div class="row">
        {pick(left, setLeft, 'From')}
        {pick(right, setRight, 'To')}
      </div>
      <p class="muted">
        Changes from version {left} to version {right}
      </p>
      {a && b ? (
        <pre class="diff">
          {diffLines(versionText(a), versionText(b)).map((line, i) => (
            <div key={i} class={line.kind}>
              {line.kind === 'added' ? '+ ' : line.kind === 'removed' ? '- ' : '  '}
              {line.text}
            </div>
          ))}
        </pre>
      ) : null}
    </section>
  );
}

function Playground({ prompt, versions }: { prompt: Row; versions: Row[] }) {
  const providers = useLoad(() => api('GET', '/providers?limit=100'));
  const [version, setVersion] = useState(String(versions[0]?.prompt_version ?? prompt.latest_version));
  const [provider, setProvider] = useState('');
  const [variables, setVariables] = useState('{}');
  const [rendered, setRendered] = useState<unknown>(null);
  const [output, setOutput] = useState('');
  const run = useAction();
  const ref = `/prompts/${encodeURIComponent(`${prompt.id}@${version}`)}`;
  const headers = (): Record<string, string> => (provider ? { 'x-gateway-provider': `@${provider}` } : {});
  const vars = () => JSON.parse(variables || '{}') as Record<string, unknown>;
  return (
    <section class="card">
      <h3>Playground</h3>
      <div class="row">
        <Field label="Version">
          <select value={version} onChange={(e) => setVersion(e.currentTarget.value)}>
            {versions.map((v) => (
              <option key={v.prompt_version} value={String(v.prompt_version)}>
                version {v.prompt_version}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Provider">
          <select name="playground-provider" value={provider} onChange={(e) => setProvider(e.currentTarget.value)}>
            <option value="">the version's own</option>
            {((providers.data?.data as Row[]) ?? []).map((p) => (
              <option key={p.slug} value={p.slug}>
                @{p.slug}
              </option>
            ))}
          </select>
        </Field>
      </div>
      <Field label="Variables (JSON)">
        <textarea rows={3} value={variables} onInput={(e) => setVariables(e.currentTarget.value)} />
      </Field>
      <div class="row">
        <button
          type="button"
          onClick={() => void run.run(async () => setRendered((await api('POST', `${ref}/render`, { variables: vars() }, headers())).data))}
        >
          Render
        </button>
        <button
          type="button"
          disabled={run.busy}
          onClick={() =>
            void run.run(async () => {
              setOutput('');
              await streamCompletion(`${ref}/completions`, { variables: vars(), stream: true }, headers(), (text) => setOutput((o) => o + text));
            })
          }
        >
          Run (streamed)
        </button>
      </div>
      <ErrorNote error={run.error} />
      {rendered ? <JsonText value={rendered} /> : null}
      <h4>Completion</h4>
      <output class="completion" data-testid="playground-output" aria-live="polite">
        {output}
      </output>
    </section>
  );
}

function PromptDetail({ prompt }: { prompt: Row }) {
  const versions = useLoad(() => api('GET', `/prompts/${encodeURIComponent(prompt.id)}/versions?limit=100&order=desc`), [prompt.id]);
  const list = (versions.data?.data as Row[]) ?? [];
  return (
    <section aria-labelledby="prompt-title">
      <h2 id="prompt-title">{prompt.name}</h2>
      <ErrorNote error={versions.error} />
      <Table
        caption={`Versions of ${prompt.name}`}
        rows={list}
        columns={[
          { label: 'Version', value: (v) => v.prompt_version },
          { label: 'Model', value: (v) => v.model },
          { label: 'Template', value: (v) => <code class="clip">{v.string}</code> },
          { label: 'Description', value: (v) => v.version_description ?? '' },
          { label: 'Created', value: (v) => when(v.created_at) },
        ]}
      />
      {list.length ? <Diff key={prompt.id} versions={list} /> : null}
      {list.length ? <Playground key={prompt.id} prompt={prompt} versions={list} /> : null}
    </section>
  );
}

function NewPrompt({ onCreated }: { onCreated: () => void }) {
  const [form, setForm] = useState({ name: '', model: 'gpt-4o-mini', virtual_key: '', string: '[{"role":"user","content":"Hello {{name}}"}]' });
  const create = useAction();
  return (
    <form
      class="card"
      onSubmit={(e) => {
        e.preventDefault();
        void create.run(async () => {
          await api('POST', '/prompts', {
            name: form.name,
            model: form.model,
            string: form.string,
            parameters: {},
            ...(form.virtual_key ? { virtual_key: form.virtual_key } : {}),
          });
          onCreated();
        });
      }}
    >
      <h2>New prompt</h2>
      <div class="row">
        <Field label="Name">
          <input name="prompt-name" required value={form.name} onInput={(e) => setForm({ ...form, name: e.currentTarget.value })} />
        </Field>
        <Field label="Model">
          <input name="prompt-model" required value={form.model} onInput={(e) => setForm({ ...form, model: e.currentTarget.value })} />
        </Field>
        <Field label="Managed provider (optional)">
          <input name="prompt-provider" value={form.virtual_key} onInput={(e) => setForm({ ...form, virtual_key: e.currentTarget.value })} />
        </Field>
      </div>
      <Field label="Template (Mustache; a JSON array of messages or plain text)">
        <textarea name="prompt-template" rows={4} value={form.string} onInput={(e) => setForm({ ...form, string: e.currentTarget.value })} />
      </Field>
      <button type="submit" disabled={create.busy}>
        Create prompt
      </button>
      <ErrorNote error={create.error} />
    </form>
  );
}

export function Prompts() {
  const list = useLoad(() => api('GET', '/prompts?limit=100'));
  const [open, setOpen] = useState<Row | null>(null);
  return (
    <div>
      <ErrorNote error={list.error} />
      <Table
        caption="Prompt templates"
        rows={(list.data?.data as Row[]) ?? []}
        columns={[
          { label: 'Name', value: (p) => p.name },
          { label: 'Slug', value: (p) => p.slug },
          { label: 'Latest', value: (p) => p.latest_version },
          { label: 'Published', value: (p) => p.published_version ?? '—' },
          {
            label: 'Open',
            value: (p) => (
              <button type="button" onClick={() => setOpen(p)}>
                Open {p.name}
              </button>
            ),
          },
        ]}
      />
      {open ? <PromptDetail key={open.id} prompt={open} /> : <NewPrompt onCreated={list.reload} />}
    </div>
  );
}
