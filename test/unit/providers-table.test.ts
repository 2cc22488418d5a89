import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { providerCatalog, SAMPLE_TARGET } from '../../functions/providers/catalog';
import { customHostRule, END_MARKER, sampleChatUrl, renderProvidersTable, START_MARKER, withProvidersTable } from '../../infra/providers-table/render';
import { getAdapter } from '../../functions/providers/registry';
import type { ProviderTarget } from '../../functions/providers/types';
import { PROVIDER_SLUGS, type ProviderSlug } from '../../functions/shared/provider-table';

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

describe('the custom_host column of docs/providers.md', () => {
  const hostOf = (url: string) => /^[a-z]+:\/\/[^/]+/.exec(url)![0];

  it('is true: a custom host written as the column says reaches the path the default base URL does', async () => {
    let checked = 0;
    for (const slug of PROVIDER_SLUGS) {
      const adapter = (await getAdapter(slug))!;
      const rule = customHostRule(slug, adapter);
      if (!adapter.chat || adapter.customHostExample) continue;
      const target = { ...SAMPLE_TARGET, provider: slug } as ProviderTarget;
      const byDefault = sampleChatUrl(adapter, target);
      const written = rule.startsWith('with `') ? `https://custom-host.example${/^with `([^`]+)`/.exec(rule)![1]}` : 'https://custom-host.example';
      const byCustomHost = sampleChatUrl(adapter, { ...target, customHost: written });
      expect(byCustomHost, `${slug}: ${rule}`).toBe(byDefault.replace(hostOf(byDefault), 'https://custom-host.example'));
      checked++;
    }
    expect(checked).toBeGreaterThan(30);
  });

  it('names the path for the common cases', async () => {
    const rule = async (slug: ProviderSlug) => customHostRule(slug, (await getAdapter(slug))!);
    expect(await rule('openai')).toBe('with `/v1`');
    expect(await rule('anthropic')).toBe('with `/v1`');
    expect(await rule('ollama')).toBe('host only');
    expect(await rule('vertex-ai')).toBe('with `/v1`');
    expect(await rule('azure-ai')).toBe('with `/models`');
    expect(await rule('bedrock')).toBe('host only');
    expect(await rule('vllm')).toBe("the server's base URL, e.g. `http://my-vllm:8000/v1`");
  });
});
