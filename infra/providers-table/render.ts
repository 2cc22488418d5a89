import type { ProviderAdapter } from '../../functions/providers/types';
/**
 * The provider table of docs/providers.md, rendered from the provider catalog (the registry), between
 * the `<!-- providers:start -->` and `<!-- providers:end -->` markers. `npm run
 * providers-table` rewrites it; test/unit/providers-table.test.ts fails when it is stale.
 */
import { providerCatalog } from '../../functions/providers/catalog';
import { getAdapter } from '../../functions/providers/registry';
import { SETTING } from '../../functions/shared/provider-table';

export const START_MARKER = '<!-- providers:start -->';
export const END_MARKER = '<!-- providers:end -->';

/** How a request supplies a setting: its header (`api_key` comes as `Authorization: Bearer`). */
const settingLabel = (field: keyof typeof SETTING) => {
  const row = SETTING[field];
  return 'header' in row ? `\`${row.header}\`` : 'provider key';
};

const authLabel = (h: string) => (h === 'signed' ? 'SigV4 signature' : h === 'iam-token' ? 'IAM bearer token (exchanged from the API key)' : `\`${h}\``);

export async function renderProvidersTable(): Promise<string> {
  const entries = await providerCatalog();
  const rows = entries.map((e) =>
    [
      `\`${e.slug}\``,
      e.name,
      e.kind === 'openai-compatible' ? 'OpenAI-compatible' : 'native',
      e.routes.join(', '),
      e.auth.length ? e.auth.map(authLabel).join(', ') : 'none',
      e.required_settings.map(settingLabel).join(', ') || 'none',
    ].join(' | '),
  );
  return [
    `${entries.length} providers (generated from the registry by \`npm run providers-table\`; \`GET /v1/providers/catalog\` serves the same list).`,
    '',
    '| slug | provider | wire format | routes | auth | required |',
    '|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r} |`),
    '',
    ...renderParamRules(await Promise.all(entries.map(async (e) => [e.slug, await getAdapter(e.slug)] as const))),
  ].join('\n');
}

const fields = (list: readonly string[] | undefined) => (list?.length ? list.map((f) => `\`${f}\``).join(', ') : '');

/** The chat fields OpenAI-shaped providers reject or rename, as their declarations say. */
function renderParamRules(adapters: ReadonlyArray<readonly [string, ProviderAdapter | undefined]>): string[] {
  const rows = adapters.flatMap(([slug, adapter]) =>
    (adapter?.paramRules ?? []).map((r) =>
      [
        `\`${slug}\``,
        r.models ? `\`${r.models.source.replace(/\|/g, '\\|')}\`` : 'all',
        fields(r.refuse),
        fields(r.drop),
        Object.entries(r.rename ?? {})
          .map(([from, to]) => `\`${from}\` → \`${to}\``)
          .join(', '),
        `[docs](${r.source})`,
      ].join(' | '),
    ),
  );
  return [
    'Chat fields OpenAI-shaped providers reject or name differently, from their declarations: a refused field that asks for',
    'something (`n` > 1, `logprobs: true`, a non-empty `logit_bias` or `stop`) is a 400 naming it, as on translated',
    "providers; an inert value of it and every dropped field are removed; a renamed field is sent under the provider's name.",
    '',
    '| slug | models | refused (400) | dropped | renamed | source |',
    '|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r} |`),
  ];
}

/** The page (docs/providers.md) with its marked section replaced by `table`; throws when the markers are missing. */
export function withProvidersTable(page: string, table: string): string {
  const start = page.indexOf(START_MARKER);
  const end = page.indexOf(END_MARKER);
  if (start < 0 || end < start) throw new Error(`docs/providers.md needs ${START_MARKER} and ${END_MARKER} markers`);
  return `${page.slice(0, start + START_MARKER.length)}\n${table}\n${page.slice(end)}`;
}
