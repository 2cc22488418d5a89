/**
 * Fine-tuning jobs call the provider long after the request (DESIGN.md §5), so they need a
 * managed provider: `x-gateway-provider: @slug` or the legacy `x-gateway-virtual-key: slug`.
 * Raw provider keys, custom hosts and configs in headers are refused: they would have to be
 * stored or queued to be used. Only the slug is stored on the job.
 */
import { badRequest } from '../shared/errors';
import type { GatewayRequest } from '../shared/http/types';
import { getProvider, MANAGED_PROVIDER_SLUG } from '../shared/stores/providers';
import { FINE_TUNING_PROVIDERS } from './providers/index';
import type { FineTuningProviderKind } from './types';

const HOW_TO =
  'Create a managed provider with POST /v1/providers (its key is stored encrypted) and send `x-gateway-provider: @<slug>` (or `x-gateway-virtual-key: <slug>`).';

const refuse = (what: string, param: string) =>
  badRequest(`Fine-tuning jobs require a managed provider: ${what}. ${HOW_TO}`, param, 'managed_provider_required');

const PER_REQUEST: Array<[string, string]> = [
  ['x-gateway-config', 'x-gateway-config cannot be bound to a job'],
  ['x-gateway-custom-host', 'a per-request custom host cannot be bound to a job (set `custom_host` on the managed provider)'],
  ['x-gateway-aws-access-key-id', 'credentials in headers cannot be bound to a job'],
  ['x-gateway-aws-secret-access-key', 'credentials in headers cannot be bound to a job'],
];

/** The managed provider slug the headers name; a 400 when there is none or it is not managed. */
export function managedProviderSlug(req: GatewayRequest): string {
  const h = req.headers;
  for (const [name, why] of PER_REQUEST) if (h[name]?.trim()) throw refuse(why, name);
  const provider = h['x-gateway-provider']?.trim() || undefined;
  const virtualKey = h['x-gateway-virtual-key']?.trim() || undefined;
  if (provider && !provider.startsWith('@')) {
    throw refuse(`\`x-gateway-provider: ${provider.slice(0, 64)}\` names a provider with a raw key`, 'x-gateway-provider');
  }
  const fromHeader = provider?.slice(1);
  if (fromHeader && virtualKey && fromHeader !== virtualKey) {
    throw badRequest('x-gateway-provider and x-gateway-virtual-key name different providers; send one of them.', 'x-gateway-virtual-key', 'contradictory_provider');
  }
  const slug = fromHeader ?? virtualKey;
  if (!slug) throw refuse('none was named', 'x-gateway-provider');
  if (!MANAGED_PROVIDER_SLUG.test(slug)) {
    throw badRequest(`Invalid managed provider '${slug.slice(0, 64)}': expected 1-64 lower-case letters, digits and dashes.`, provider ? 'x-gateway-provider' : 'x-gateway-virtual-key', 'invalid_value');
  }
  return slug;
}

/** The managed provider's kind, when it exists in the workspace and can fine-tune. */
export async function fineTuningProviderKind(workspaceId: string, slug: string): Promise<FineTuningProviderKind> {
  const found = await getProvider(workspaceId, slug);
  if (!found) throw badRequest(`No managed provider '@${slug}' in this workspace. ${HOW_TO}`, 'x-gateway-provider', 'provider_not_found');
  if (!(FINE_TUNING_PROVIDERS as readonly string[]).includes(found.provider)) {
    throw badRequest(
      `Managed provider '@${slug}' is a '${found.provider}' provider, which has no fine-tuning API in the gateway. Supported: ${FINE_TUNING_PROVIDERS.join(', ')}.`,
      'x-gateway-provider',
      'unsupported_provider',
    );
  }
  return found.provider as FineTuningProviderKind;
}
