import { setTimeout as sleep } from 'node:timers/promises';
import { alreadyExists, conflict } from '../errors';

/**
 * Slugs are unique per workspace through a claim item written in the same transaction as
 * the resource (`attribute_not_exists(pk)` on both). Creating one tries the slug asked
 * for; a slug made from the name falls back to the same slug with a short suffix from the
 * id. `write` answers the created resource, `taken` when a condition failed, or
 * `conflict` when a concurrent transaction clashed (the same slug is tried again).
 */
export type SlugWrite<T> = T | 'taken' | 'conflict';

const CONFLICT_ATTEMPTS = 3;

export async function createWithUniqueSlug<T>(opts: {
  /** The resource's name in messages, e.g. `config`, `prompt template`. */
  what: string;
  slug: string;
  /** The caller chose the slug: no suffixed fallback. */
  chosen?: boolean;
  id: string;
  write: (slug: string) => Promise<SlugWrite<T>>;
}): Promise<T> {
  const { slug: base, id } = opts;
  const candidates = opts.chosen ? [base] : [base, `${base.slice(0, 57)}-${id.slice(-6)}`];
  let last: 'taken' | 'conflict' = 'taken';
  for (const slug of candidates) {
    for (let attempt = 0; attempt < CONFLICT_ATTEMPTS; attempt++) {
      if (attempt > 0) await sleep(Math.floor(Math.random() * 20 * attempt));
      const written = await opts.write(slug);
      if (written !== 'taken' && written !== 'conflict') return written as T;
      last = written as 'taken' | 'conflict';
      if (last === 'taken') break;
    }
  }
  const article = /^[aeiou]/i.test(opts.what) ? 'An' : 'A';
  if (last === 'conflict') throw conflict(`Another request is creating ${article.toLowerCase()} ${opts.what} with this slug; retry.`, 'concurrent_update');
  throw alreadyExists(`${article} ${opts.what} with slug '${base}' already exists in this workspace.`, 'slug_taken');
}
