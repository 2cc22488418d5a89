import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { providerCatalog } from '../../functions/providers/catalog';
import { END_MARKER, renderProvidersTable, START_MARKER, withProvidersTable } from '../../infra/providers-table/render';
import { PROVIDER_SLUGS } from '../../functions/shared/provider-table';

describe('the provider table of docs/providers.md', () => {
  it('is what `npm run providers-table` renders from the registry (run it after adding a provider)', async () => {
    const page = readFileSync(new URL('../../docs/providers.md', import.meta.url), 'utf8');
    expect(page).toBe(withProvidersTable(page, await renderProvidersTable()));
  });

  it('has one row per provider slug', async () => {
    const table = await renderProvidersTable();
    for (const slug of PROVIDER_SLUGS) expect(table).toContain(`| \`${slug}\` |`);
    const providerTable = table.slice(0, table.indexOf('\n\n', table.indexOf('| slug |')));
    expect(providerTable.split('\n').filter((l) => l.startsWith('| `'))).toHaveLength(PROVIDER_SLUGS.length);
  });

  it('lists every declared parameter rule with its source', async () => {
    const table = await renderProvidersTable();
    const rules = table.slice(table.indexOf('| slug | models |'));
    for (const slug of ['groq', 'cerebras', 'xai', 'mistral-ai']) expect(rules).toContain(`| \`${slug}\` |`);
    for (const line of rules.split('\n').filter((l) => l.startsWith('| `'))) expect(line).toMatch(/\[docs\]\(https:\/\//);
  });

  it('replaces only the marked section and refuses a page without markers', async () => {
    const doc = `a\n${START_MARKER}\nold\n${END_MARKER}\nb`;
    expect(withProvidersTable(doc, 'new')).toBe(`a\n${START_MARKER}\nnew\n${END_MARKER}\nb`);
    expect(() => withProvidersTable('no markers', 'x')).toThrow(/markers/);
  });
});

describe('the provider catalog', () => {
  it('lists at least 45 providers, each with routes and its required settings', async () => {
    const catalog = await providerCatalog();
    expect(catalog.length).toBeGreaterThanOrEqual(45);
    for (const e of catalog) expect(e.routes.length, e.slug).toBeGreaterThan(0);
    const bySlug = Object.fromEntries(catalog.map((e) => [e.slug, e]));
    expect(bySlug.vllm).toMatchObject({ kind: 'openai-compatible', required_settings: ['custom_host'] });
    expect(bySlug.scaleway).toMatchObject({ routes: ['chat', 'embeddings', 'models'], required_settings: ['api_key'] });
    expect(bySlug.bedrock).toMatchObject({ kind: 'native', auth: ['signed'] });
  });
});
