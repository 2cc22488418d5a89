import { badRequest, notFound } from '../shared/errors';

/**
 * `{promptId}` on every prompt route: the template's id (uuid) or slug, then an optional
 * version selector — `@latest` (the newest version), `@<n>` (version n), or nothing
 * (the Published version).
 */
export type VersionSelector = { kind: 'published' } | { kind: 'latest' } | { kind: 'number'; n: number };

export interface PromptRef {
  /** Id or slug as given. */
  ref: string;
  selector: VersionSelector;
  /** The parameter as it came, for messages. */
  raw: string;
}

/** Longest id or slug that can exist; a longer reference is simply unknown. */
export const MAX_PROMPT_REF_LENGTH = 128;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isPromptId = (value: string) => UUID.test(value);

export const promptNotFound = (raw: string) => notFound(`No prompt template '${raw.slice(0, MAX_PROMPT_REF_LENGTH)}' in this workspace.`, 'promptId');

export function parsePromptRef(raw: string): PromptRef {
  const at = raw.lastIndexOf('@');
  const ref = at === -1 ? raw : raw.slice(0, at);
  const suffix = at === -1 ? undefined : raw.slice(at + 1);
  if (!ref || ref.length > MAX_PROMPT_REF_LENGTH) throw promptNotFound(raw);
  if (suffix === undefined) return { ref, selector: { kind: 'published' }, raw };
  if (suffix === 'latest') return { ref, selector: { kind: 'latest' }, raw };
  if (/^[0-9]{1,9}$/.test(suffix)) return { ref, selector: { kind: 'number', n: Number(suffix) }, raw };
  throw badRequest(
    `Invalid \`promptId\`: the version suffix must be \`@latest\` or \`@<version_number>\`, got '@${suffix.slice(0, 32)}'.`,
    'promptId',
    'invalid_value',
  );
}
