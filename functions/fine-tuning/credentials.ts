import { badRequest } from '../shared/errors';
import type { GatewayRequest } from '../shared/http/types';
import { managedProviderFromHeaders, managedProviderRequired, MANAGED_PROVIDER_HOW_TO, type DeferredUse } from '../shared/auth/managed-provider';
import { getProvider } from '../shared/stores/providers';
import { FINE_TUNING_PROVIDERS } from './providers/index';
import type { FineTuningProviderKind } from './types';

/**
 * Fine-tuning jobs call the provider long after the request, so they need a managed
 * provider (the rule: shared/auth/managed-provider.ts). Only the slug is stored on the job.
 */
const FINE_TUNING: DeferredUse = { feature: 'Fine-tuning jobs', boundTo: 'job' };

/** The managed provider slug the headers name; a 400 when there is none or it is not managed. */
export function managedProviderSlug(req: GatewayRequest): string {
  const slug = managedProviderFromHeaders(req, FINE_TUNING);
  if (!slug) throw managedProviderRequired(FINE_TUNING, 'none was named', 'x-gateway-provider');
  return slug;
}

/** The managed provider's kind, when it exists in the workspace and can fine-tune. */
export async function fineTuningProviderKind(workspaceId: string, slug: string): Promise<FineTuningProviderKind> {
  const found = await getProvider(workspaceId, slug);
  if (!found) throw badRequest(`No managed provider '@${slug}' in this workspace. ${MANAGED_PROVIDER_HOW_TO}`, 'x-gateway-provider', 'provider_not_found');
  if (!(FINE_TUNING_PROVIDERS as readonly string[]).includes(found.provider)) {
    throw badRequest(
      `Managed provider '@${slug}' is a '${found.provider}' provider, which has no fine-tuning API in the gateway. Supported: ${FINE_TUNING_PROVIDERS.join(', ')}.`,
      'x-gateway-provider',
      'unsupported_provider',
    );
  }
  return found.provider as FineTuningProviderKind;
}
