import type { ProviderAdapter, ProviderTarget } from '../../functions/providers/types';
/**
 * The provider table of docs/providers.md, rendered from the provider catalog (the registry), between
 * the `<!-- providers:start -->` and `<!-- providers:end -->` markers. `npm run
 * providers-table` rewrites it; test/unit/providers-table.test.ts fails when it is stale.
 */
import { providerCatalog, SAMPLE_TARGET } from '../../functions/providers/catalog';
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

const SAMPLE_HOST = 'https://custom-host.example';
const pathOf = (url: string) => url.replace(/^[a-z]+:\/\/[^/]+/, '');

/** The URL of a sample chat request (a model named `owner/name` where a bare name is refused). */
export function sampleChatUrl(adapter: ProviderAdapter, target: ProviderTarget): string {
  const request = (model: string) => adapter.chat!.request({ model, messages: [{ role: 'user', content: 'hi' }] }, target).url;
  try {
    return request('model-1');
  } catch {
    return request('owner/model-1');
  }
}

/** A chat request's path, without scheme, host and query: what a custom host leads to. */
const chatPath = (adapter: ProviderAdapter, target: ProviderTarget) => pathOf(sampleChatUrl(adapter, target)).replace(/\?.*$/, '');

/**
 * What `custom_host` (or `x-gateway-custom-host`) must hold, read off the adapter: the path
 * of a chat request built with a sample host, against the one built with the default base
 * URL. What the default path has beyond it (`/v1` ...) must be in the custom host; nothing
 * means the host alone. Providers without chat are read off `baseUrl`, the proxy's base.
 */
export function customHostRule(slug: string, adapter: ProviderAdapter): string {
  if (adapter.customHostExample) return `the server's base URL, e.g. \`${adapter.customHostExample}\``;
  const target = { ...SAMPLE_TARGET, provider: slug } as ProviderTarget;
  const custom = { ...target, customHost: SAMPLE_HOST };
  const [byDefault, byCustomHost] = adapter.chat
    ? [chatPath(adapter, target), chatPath(adapter, custom)]
    : [pathOf(adapter.baseUrl(target)), pathOf(adapter.baseUrl(custom))];
  const prefix = byDefault.endsWith(byCustomHost) ? byDefault.slice(0, byDefault.length - byCustomHost.length) : byDefault;
  return prefix ? `with \`${prefix}\`` : 'host only';
}

export async function renderProvidersTable(): Promise<string> {
  const entries = await providerCatalog();
  const rows = await Promise.all(
    entries.map(async (e) =>
      [
        `\`${e.slug}\``,
        e.name,
        e.kind === 'openai-compatible' ? 'OpenAI-compatible' : 'native',
        e.routes.join(', '),
        e.auth.length ? e.auth.map(authLabel).join(', ') : 'none',
        e.required_settings.map(settingLabel).join(', ') || 'none',
        customHostRule(e.slug, (await getAdapter(e.slug))!),
      ].join(' | '),
    ),
  );
  return [
    `${entries.length} providers (generated from the registry by \`npm run providers-table\`; \`GET /v1/providers/catalog\` serves the same list).`,
    'The `custom_host` column says what a custom host holds: the host and the path before the route (`with /v1`), or',
    'the host alone, the gateway adding the path (read off each adapter; a unit test checks each row).',
    '',
    '| slug | provider | wire format | routes | auth | required | `custom_host` |',
    '|---|---|---|---|---|---|---|',
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
