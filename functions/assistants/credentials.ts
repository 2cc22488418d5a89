import { badRequest } from '../shared/errors';
import type { GatewayRequest } from '../shared/http/types';
import { getProvider, MANAGED_PROVIDER_SLUG } from '../shared/stores/providers';

/**
 * The credentials rule of assistant endpoints (issue «Assistants» item 2, DESIGN.md §5):
 * runs call the model later, from a queue and a state machine, so they need stored
 * credentials. Only a managed provider (`x-gateway-provider: @slug`, the legacy
 * `x-gateway-virtual-key`, or the assistant's bound provider) is accepted; anything that
 * carries a raw key or a per-request provider setting is refused with a 400, because it
 * would have to be stored or queued to be used. Only the slug is ever stored.
 */

const HOW_TO =
  'Create a managed provider with POST /v1/providers (its key is stored encrypted) and send ' +
  '`x-gateway-provider: @<slug>` (or `x-gateway-virtual-key: <slug>`).';

const refuse = (what: string, header: string) =>
  badRequest(
    `Assistant endpoints require a managed provider: ${what}, and raw provider credentials are never stored or queued. ${HOW_TO}`,
    header,
    'managed_provider_required',
  );

/** Headers that carry a credential or a per-request provider setting (never storable). */
const PER_REQUEST_HEADERS: Array<[string, string]> = [
  ['x-gateway-config', 'x-gateway-config cannot be bound to a run'],
  ['x-gateway-custom-host', 'a per-request custom host cannot be bound to a run (set `custom_host` on the managed provider)'],
  ['x-gateway-aws-access-key-id', 'AWS credentials in headers cannot be bound to a run'],
  ['x-gateway-aws-secret-access-key', 'AWS credentials in headers cannot be bound to a run'],
  ['x-gateway-aws-session-token', 'AWS credentials in headers cannot be bound to a run'],
];

/**
 * Check the provider headers of any assistant-group request and return the managed
 * provider slug they name (without `@`), if any. Throws a 400 for raw provider keys.
 */
export function managedProviderFromHeaders(req: GatewayRequest): string | undefined {
  const h = req.headers;
  for (const [name, why] of PER_REQUEST_HEADERS) if (h[name]?.trim()) throw refuse(why, name);
  const provider = h['x-gateway-provider']?.trim() || undefined;
  const virtualKey = h['x-gateway-virtual-key']?.trim() || undefined;
  if (provider && !provider.startsWith('@')) {
    throw refuse(`\`x-gateway-provider: ${provider.slice(0, 64)}\` names a provider with a raw key`, 'x-gateway-provider');
  }
  const fromProvider = provider?.slice(1);
  if (fromProvider && virtualKey && fromProvider !== virtualKey) {
    throw badRequest('x-gateway-provider and x-gateway-virtual-key name different providers; send one of them.', 'x-gateway-virtual-key', 'contradictory_provider');
  }
  const slug = fromProvider ?? virtualKey;
  if (slug !== undefined && !MANAGED_PROVIDER_SLUG.test(slug)) {
    throw badRequest(`Invalid managed provider '${slug.slice(0, 64)}': expected @ and 1-64 lower-case letters, digits and dashes.`, provider ? 'x-gateway-provider' : 'x-gateway-virtual-key', 'invalid_value');
  }
  return slug;
}

/** `@slug` in a body field (the assistant's `provider` extension) -> slug. */
export const PROVIDER_REF = /^@[a-z0-9][a-z0-9-]{0,63}$/;

/** Verify the managed provider exists in the workspace; returns the slug. */
export async function requireManagedProvider(workspaceId: string, slug: string | undefined, field: string): Promise<string> {
  if (!slug) throw refuse('no managed provider was given (header or the assistant binding)', field);
  const found = await getProvider(workspaceId, slug);
  if (!found) throw badRequest(`No managed provider '@${slug}' in this workspace. ${HOW_TO}`, field, 'provider_not_found');
  return slug;
}
