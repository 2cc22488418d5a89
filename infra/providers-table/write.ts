/** `npm run providers-table`: rewrite the provider table in docs/providers.md from the registry. */
import { readFileSync, writeFileSync } from 'node:fs';
import { renderProvidersTable, withProvidersTable } from './render';

const page = new URL('../../docs/providers.md', import.meta.url);
writeFileSync(page, withProvidersTable(readFileSync(page, 'utf8'), await renderProvidersTable()));
