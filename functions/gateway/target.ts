import { badRequest } from '../shared/errors';
import { assertOneProvider } from '../shared/auth/managed-provider';
import { parseGatewayConfig, type ConfigNode, type GatewayConfigSpec } from '../shared/gateway-config';
import type { CallerRequest } from '../shared/http/types';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../shared/json-depth';
import { resolveManagedProvider, type ManagedProviderWithSecrets } from '../shared/stores/providers';
import { resolveSavedConfig, type SavedConfig } from '../shared/stores/configs';
import { cloudSettingsFromHeaders, PROVIDER_SLUGS, SETTING_NAMES, targetSettings } from '../shared/provider-table';
import { getAdapter } from '../providers/registry';
import type { ProviderAdapter, ProviderTarget } from '../providers/types';

/**
 * The four ways to name a provider. Every one of them becomes a config tree,
 * so routing, retries and logging have one path: headers make a single-leaf config.
 */
export interface ResolvedConfig {
  config: GatewayConfigSpec;
  /** `config` when it came from x-gateway-config (then the option index header is sent). */
  source: 'config' | 'headers';
}

function bearer(headers: Record<string, string>): string | undefined {
  const auth = headers.authorization;
  if (!auth) return undefined;
  const match = /^Bearer\s+(.+)$/i.exec(auth.trim());
  return match ? match[1] : auth.trim();
}

const HOW_TO =
  'Send `x-gateway-provider` (a provider slug with `Authorization: Bearer <key>`, or `@managed-provider`), ' +
  '`x-gateway-virtual-key`, or `x-gateway-config`.';

export async function resolveConfig(req: CallerRequest): Promise<ResolvedConfig> {
  const h = req.headers;
  const provider = h['x-gateway-provider']?.trim();
  const virtualKey = h['x-gateway-virtual-key']?.trim();
  const rawConfig = h['x-gateway-config']?.trim();
  const customHost = h['x-gateway-custom-host']?.trim();

  if (rawConfig) {
    if (provider || virtualKey) {
      throw badRequest(
        `x-gateway-config already names its providers; do not combine it with x-gateway-provider or x-gateway-virtual-key.`,
        'x-gateway-config',
        'contradictory_provider',
      );
    }
    return { config: await loadConfig(rawConfig, req.auth.workspaceId), source: 'config' };
  }
  assertOneProvider(provider, virtualKey);
  if (!provider && !virtualKey && !customHost && req.auth.defaultConfig) {
    // The request names no provider: the gateway key's own default config routes it.
    return { config: await loadConfig(req.auth.defaultConfig, req.auth.workspaceId, 'default_config'), source: 'config' };
  }
  if (!provider && !virtualKey) {
    throw badRequest(
      customHost ? `x-gateway-custom-host needs x-gateway-provider to say which API the host speaks. ${HOW_TO}` : `No provider given. ${HOW_TO}`,
      'x-gateway-provider',
      'missing_provider',
    );
  }
  const managed = Boolean(virtualKey) || Boolean(provider?.startsWith('@'));
  const virtualKeyOnly = Boolean(virtualKey) && !provider;
  // Both names are always present (one may be undefined): a literal that opens with a
  // spread of one of two shapes and then spreads the cloud settings is an order of magnitude
  // slower in V8 (bench/README.md).
  const leaf: ConfigNode = {
    provider: virtualKeyOnly ? undefined : provider,
    virtual_key: virtualKeyOnly ? virtualKey : undefined,
    // A managed provider holds its own credential; the caller's Authorization (often an
    // SDK placeholder) must not replace it.
    api_key: managed ? undefined : bearer(h),
    custom_host: customHost,
    ...cloudSettingsFromHeaders(h),
  };
  return { config: leaf, source: 'headers' };
}

/** A config reference: inline JSON or a saved config's id or slug; `source` names it in errors. */
async function loadConfig(raw: string, workspaceId: string, source: 'x-gateway-config' | 'default_config' = 'x-gateway-config'): Promise<GatewayConfigSpec> {
  if (raw.startsWith('{')) {
    if (nestsDeeperThan(raw)) throw badRequest(`${source} nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`, source, 'json_too_deep');
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch (err) {
      throw badRequest(`${source} is not valid JSON: ${(err as Error).message}`, source, 'invalid_config');
    }
    return parseGatewayConfig(parsed, source);
  }
  const saved = await resolveSavedConfig(workspaceId, raw);
  if (!saved) {
    const message =
      source === 'default_config'
        ? `This gateway key's default config '${raw}' is no longer a saved config of this workspace; set another with PUT /v1/api-keys/{id}.`
        : `No saved config '${raw}' in this workspace.`;
    throw badRequest(message, source, 'config_not_found');
  }
  return parsedSavedConfig(saved);
}

/**
 * A saved config is parsed once per cached copy, not per request: the copy is held by the
 * control cache until it is reloaded, and routing only reads the tree. A config that does
 * not parse is not remembered, so every request still gets its 400.
 */
const parsedConfigs = new WeakMap<SavedConfig, GatewayConfigSpec>();
function parsedSavedConfig(saved: SavedConfig): GatewayConfigSpec {
  let parsed = parsedConfigs.get(saved);
  if (!parsed) {
    parsed = parseGatewayConfig(saved.config, 'config');
    parsedConfigs.set(saved, parsed);
  }
  return parsed;
}

const SETTING_FIELDS: ReadonlySet<string> = new Set(SETTING_NAMES);

export interface ResolvedTarget {
  adapter: ProviderAdapter;
  target: ProviderTarget;
  /** Managed provider slug when one was used (for logs), never a credential. */
  managedProvider?: string;
}

/** A config leaf -> the adapter and everything it needs, reading managed providers (cached). */
export async function resolveLeaf(node: ConfigNode, workspaceId: string): Promise<ResolvedTarget> {
  const managedSlug = node.virtual_key ?? (node.provider?.startsWith('@') ? node.provider.slice(1) : undefined);
  let merged: ConfigNode = node;
  if (managedSlug) {
    const managed = await resolveManagedProvider(workspaceId, managedSlug);
    if (!managed) {
      throw badRequest(
        `No managed provider '@${managedSlug}' in this workspace. Create it with POST /v1/providers.`,
        'x-gateway-provider',
        'provider_not_found',
      );
    }
    merged = mergedLeaf(node, managed);
  }
  const slug = merged.provider!;
  const adapter = await getAdapter(slug);
  if (!adapter) {
    throw badRequest(`Unknown provider '${slug}'. Known providers: ${PROVIDER_SLUGS.join(', ')}.`, 'x-gateway-provider', 'unknown_provider');
  }
  return { adapter, target: toTarget(merged, slug), managedProvider: managedSlug };
}

/**
 * A managed leaf's settings: the provider's stored ones first, anything the leaf states
 * explicitly (other than the slug) winning. Both are cached copies that routing only reads
 * (the parsed config, the managed provider until it is reloaded), so the merge is made once
 * per pair, not per request; a reloaded provider is a new copy and merges anew.
 */
const mergedLeaves = new WeakMap<ConfigNode, { managed: ManagedProviderWithSecrets; merged: ConfigNode }>();
function mergedLeaf(node: ConfigNode, managed: ManagedProviderWithSecrets): ConfigNode {
  const known = mergedLeaves.get(node);
  if (known?.managed === managed) return known.merged;
  const stored: Partial<ConfigNode> = { provider: managed.provider };
  for (const [field, value] of Object.entries(Object.assign({}, managed, managed.secrets))) {
    if (value !== null && value !== undefined && SETTING_FIELDS.has(field)) (stored as Record<string, unknown>)[field] = value;
  }
  const merged = Object.assign(stored, explicitSettings(node)) as ConfigNode;
  mergedLeaves.set(node, { managed, merged });
  return merged;
}

/** What a leaf states itself (defined values), without the name of its provider. */
function explicitSettings(node: ConfigNode): Partial<ConfigNode> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (value !== undefined && key !== 'provider' && key !== 'virtual_key') out[key] = value;
  }
  return out as Partial<ConfigNode>;
}

function toTarget(n: ConfigNode, provider: string): ProviderTarget {
  return { provider, ...targetSettings(n) };
}

/** Every provider target of a config tree, whatever its strategies would choose at run time. */
export const configLeaves = (node: ConfigNode): ConfigNode[] => (node.targets?.length ? node.targets.flatMap(configLeaves) : [node]);

/** The provider slugs a request can reach: each leaf of its config, managed providers resolved. */
export async function reachableProviders(req: CallerRequest, config?: GatewayConfigSpec): Promise<string[]> {
  const tree = config ?? (await resolveConfig(req)).config;
  return Promise.all(configLeaves(tree).map(async (leaf) => (await resolveLeaf(leaf, req.auth.workspaceId)).adapter.slug));
}
