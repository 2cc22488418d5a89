/** `npm run providers-table`: rewrite the provider table in README.md from the registry. */
import { readFileSync, writeFileSync } from 'node:fs';
import { renderProvidersTable, withProvidersTable } from './render';

const readme = new URL('../../README.md', import.meta.url);
writeFileSync(readme, withProvidersTable(readFileSync(readme, 'utf8'), await renderProvidersTable()));
