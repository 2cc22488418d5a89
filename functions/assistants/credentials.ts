import { badRequest } from '../shared/errors';
import type { GatewayRequest } from '../shared/http/types';
import { managedProviderFromHeaders, managedProviderRequired, MANAGED_PROVIDER_HOW_TO, type DeferredUse } from '../shared/auth/managed-provider';
import { getProvider } from '../shared/stores/providers';

/**
 * The credentials rule of assistant endpoints: runs call the model later, from a queue and
 * a state machine, so only a managed provider (headers, or the assistant's bound provider)
 * is accepted (the rule itself: shared/auth/managed-provider.ts).
 */
const ASSISTANTS: DeferredUse = { feature: 'Assistant endpoints', boundTo: 'run' };

/** The managed provider slug an assistant-group request's headers name, if any. */
export const assistantProviderFromHeaders = (req: GatewayRequest): string | undefined => managedProviderFromHeaders(req, ASSISTANTS);

/** `@slug` in a body field (the assistant's `provider` extension) -> slug. */
export const PROVIDER_REF = /^@[a-z0-9][a-z0-9-]{0,63}$/;

/** Verify the managed provider exists in the workspace; returns the slug. */
export async function requireManagedProvider(workspaceId: string, slug: string | undefined, field: string): Promise<string> {
  if (!slug) throw managedProviderRequired(ASSISTANTS, 'no managed provider was given (header or the assistant binding)', field);
  const found = await getProvider(workspaceId, slug);
  if (!found) throw badRequest(`No managed provider '@${slug}' in this workspace. ${MANAGED_PROVIDER_HOW_TO}`, field, 'provider_not_found');
  return slug;
}
