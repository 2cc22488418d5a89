import { useState } from 'preact/hooks';
import { api, type Row } from '../api';
import { ErrorNote, Field, JsonText, ListOf, useLoad, when } from '../ui';

/** Text of a message's content parts (text only; other parts by their type). */
const contentText = (m: Row) => ((m.content as Row[]) ?? []).map((part) => (part.type === 'text' ? part.text?.value : `[${part.type}]`)).join('\n');

function Steps({ threadId, runId }: { threadId: string; runId: string }) {
  return (
    <ListOf
      path={`/threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(runId)}/steps?limit=100&order=asc`}
      caption={`Steps of run ${runId}`}
      columns={[
        { label: 'Step', value: (s) => s.id },
        { label: 'Type', value: (s) => s.type },
        { label: 'Status', value: (s) => s.status },
        { label: 'Details', value: (s) => <JsonText value={s.step_details} /> },
      ]}
    />
  );
}

function Thread({ threadId }: { threadId: string }) {
  const base = `/threads/${encodeURIComponent(threadId)}`;
  const thread = useLoad(() => api('GET', base), [threadId]);
  const [run, setRun] = useState<string | null>(null);
  if (thread.error) return <ErrorNote error={thread.error} />;
  return (
    <section aria-labelledby="thread-title">
      <h2 id="thread-title">Thread {threadId}</h2>
      <h3>Messages</h3>
      <ListOf
        path={`${base}/messages?limit=100&order=asc`}
        caption="Messages, oldest first"
        columns={[
          { label: 'Role', value: (m) => m.role },
          { label: 'Text', value: (m) => <span class="pre">{contentText(m)}</span> },
          { label: 'Run', value: (m) => m.run_id ?? '' },
          { label: 'Created', value: (m) => when(m.created_at) },
        ]}
      />
      <h3>Runs</h3>
      <ListOf
        path={`${base}/runs?limit=100`}
        caption="Runs"
        columns={[
          { label: 'Run', value: (r) => r.id },
          { label: 'Status', value: (r) => r.status },
          { label: 'Model', value: (r) => r.model },
          { label: 'Error', value: (r) => r.last_error?.message ?? '' },
          {
            label: 'Steps',
            value: (r) => (
              <button type="button" onClick={() => setRun(r.id)}>
                Steps of {r.id}
              </button>
            ),
          },
        ]}
      />
      {run ? <Steps threadId={threadId} runId={run} /> : null}
    </section>
  );
}

export function Assistants() {
  const [draft, setDraft] = useState('');
  const [thread, setThread] = useState<string | null>(null);
  return (
    <div>
      <ListOf
        path="/assistants?limit=100"
        caption="Assistants"
        columns={[
          { label: 'Name', value: (a) => a.name ?? '' },
          { label: 'Id', value: (a) => a.id },
          { label: 'Model', value: (a) => a.model },
          { label: 'Created', value: (a) => when(a.created_at) },
        ]}
      />
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          setThread(draft.trim() || null);
        }}
      >
        <Field label="Thread id" hint="The API lists no threads: open one by its id (thread_...).">
          <input name="thread" value={draft} onInput={(e) => setDraft(e.currentTarget.value)} />
        </Field>
        <button type="submit">Open thread</button>
      </form>
      {thread ? <Thread key={thread} threadId={thread} /> : null}
    </div>
  );
}
