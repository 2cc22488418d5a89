import { badRequest } from '../errors';
import type { GatewayRequest } from '../http/types';
import { CLOUD_SETTINGS, type SettingGroup } from '../provider-table';
import { MANAGED_PROVIDER_SLUG } from '../stores/providers';

/**
 * The provider headers of work the gateway does later (assistant runs, fine-tuning jobs):
 * it calls the provider from a queue or a state machine, so it needs stored credentials.
 * Only a managed provider (`x-gateway-provider: @slug` or the legacy
 * `x-gateway-virtual-key: slug`) is accepted; a header that carries a raw key or a
 * per-request provider setting is a 400, because it would have to be stored or queued to
 * be used. Only the slug is ever stored.
 */

export const MANAGED_PROVIDER_HOW_TO =
  'Create a managed provider with POST /v1/providers (its key is stored encrypted) and send ' +
  '`x-gateway-provider: @<slug>` (or `x-gateway-virtual-key: <slug>`).';

/** Who asks, in the words of its refusals: e.g. `{ feature: 'Assistant endpoints', boundTo: 'run' }`. */
export interface DeferredUse {
  feature: string;
  boundTo: string;
}

export const managedProviderRequired = (use: DeferredUse, what: string, header: string) =>
  badRequest(
    `${use.feature} require a managed provider: ${what}, and raw provider credentials are never stored or queued. ${MANAGED_PROVIDER_HOW_TO}`,
    header,
    'managed_provider_required',
  );

const CLOUD_NAMES: Record<SettingGroup, string> = { azure: 'Azure', vertex: 'Vertex AI', aws: 'AWS', watsonx: 'IBM watsonx' };

/** Headers that carry a credential or a per-request provider setting (never storable). */
const PER_REQUEST_HEADERS: ReadonlyArray<[header: string, why: (boundTo: string) => string]> = [
  ['x-gateway-config', (to) => `x-gateway-config cannot be bound to a ${to}`],
  ['x-gateway-custom-host', (to) => `a per-request custom host cannot be bound to a ${to} (set \`custom_host\` on the managed provider)`],
  ...CLOUD_SETTINGS.filter((row) => row.secret).map((row): [string, (to: string) => string] => [
    row.header,
    (to) => `${CLOUD_NAMES[row.group]} credentials in headers cannot be bound to a ${to}`,
  ]),
];

/** `x-gateway-provider` and `x-gateway-virtual-key` may both be sent only when they name the same managed provider. */
export function assertOneProvider(provider: string | undefined, virtualKey: string | undefined): void {
  if (provider && virtualKey && provider !== `@${virtualKey}`) {
    throw badRequest(
      'x-gateway-provider and x-gateway-virtual-key name different providers; send one of them.',
      'x-gateway-virtual-key',
      'contradictory_provider',
    );
  }
}

/** The managed provider slug (without `@`) the headers name, if any; a 400 for anything that is not storable. */
export function managedProviderFromHeaders(req: GatewayRequest, use: DeferredUse): string | undefined {
  const h = req.headers;
  for (const [name, why] of PER_REQUEST_HEADERS) if (h[name]?.trim()) throw managedProviderRequired(use, why(use.boundTo), name);
  const provider = h['x-gateway-provider']?.trim() || undefined;
  const virtualKey = h['x-gateway-virtual-key']?.trim() || undefined;
  if (provider && !provider.startsWith('@')) {
    throw managedProviderRequired(use, `\`x-gateway-provider: ${provider.slice(0, 64)}\` names a provider with a raw key`, 'x-gateway-provider');
  }
  assertOneProvider(provider, virtualKey);
  const slug = provider?.slice(1) ?? virtualKey;
  if (slug !== undefined && !MANAGED_PROVIDER_SLUG.test(slug)) {
    throw badRequest(
      `Invalid managed provider '${slug.slice(0, 64)}': expected @ and 1-64 lower-case letters, digits and dashes.`,
      provider ? 'x-gateway-provider' : 'x-gateway-virtual-key',
      'invalid_value',
    );
  }
  return slug;
}

/**
 * Whether the headers name a provider for this request only: a provider slug with the
 * caller's own key (`x-gateway-provider: openai`), or a config. Work the gateway does later
 * cannot use such a provider, but the provider's own API can serve the request.
 */
export function namesPerRequestProvider(headers: Record<string, string>): boolean {
  const provider = headers['x-gateway-provider']?.trim();
  return Boolean((provider && !provider.startsWith('@')) || headers['x-gateway-config']?.trim());
}

/** Whether the headers name any provider at all (per request or managed). */
export const namesAnyProvider = (headers: Record<string, string>): boolean =>
  Boolean(headers['x-gateway-provider']?.trim() || headers['x-gateway-virtual-key']?.trim() || headers['x-gateway-config']?.trim());
