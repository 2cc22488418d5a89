import { useState } from 'preact/hooks';
import { ListOf, when } from '../ui';

export function FineTuning() {
  const [open, setOpen] = useState<string | null>(null);
  return (
    <div>
      <ListOf
        path="/fine_tuning/jobs?limit=100"
        caption="Fine-tuning jobs"
        columns={[
          { label: 'Job', value: (j) => j.id },
          { label: 'Model', value: (j) => j.model },
          { label: 'Status', value: (j) => j.status },
          { label: 'Fine-tuned model', value: (j) => j.fine_tuned_model ?? '—' },
          { label: 'Created', value: (j) => when(j.created_at) },
          {
            label: 'Events',
            value: (j) => (
              <button type="button" onClick={() => setOpen(j.id)}>
                Events of {j.id}
              </button>
            ),
          },
        ]}
      />
      {open ? (
        <section>
          <h2>Events of {open}</h2>
          <ListOf
            path={`/fine_tuning/jobs/${encodeURIComponent(open)}/events?limit=100`}
            caption={`Events of ${open}`}
            columns={[
              { label: 'Time (UTC)', value: (e) => when(e.created_at) },
              { label: 'Level', value: (e) => e.level },
              { label: 'Message', value: (e) => e.message },
            ]}
          />
        </section>
      ) : null}
    </div>
  );
}
