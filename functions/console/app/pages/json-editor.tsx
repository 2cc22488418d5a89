import { useState } from 'preact/hooks';
import { ApiError, api } from '../api';
import { ErrorNote, Field, useAction } from '../ui';

/**
 * A JSON document edited as text and sent to the API as is: a syntax error is shown before
 * sending, and the API's validation error (message and field) inline under the editor.
 */
export function JsonEditor({ label, method, path, initial, onSaved }: { label: string; method: string; path: string; initial: unknown; onSaved: () => void }) {
  const [text, setText] = useState(JSON.stringify(initial, null, 2));
  const save = useAction();
  return (
    <form
      class="card"
      onSubmit={(e) => {
        e.preventDefault();
        void save.run(async () => {
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch (err) {
            throw new ApiError(400, `Not JSON: ${(err as Error).message}`);
          }
          await api(method, path, body);
          onSaved();
        });
      }}
    >
      <Field label={label}>
        <textarea rows={14} spellcheck={false} value={text} onInput={(e) => setText(e.currentTarget.value)} />
      </Field>
      <ErrorNote error={save.error} />
      <button type="submit" disabled={save.busy}>
        Save
      </button>
    </form>
  );
}
