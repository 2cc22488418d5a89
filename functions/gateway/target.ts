import { badRequest } from '../shared/errors';
import { assertOneProvider } from '../shared/auth/managed-provider';
import { parseGatewayConfig, type ConfigNode, type GatewayConfigSpec } from '../shared/gateway-config';
import type { CallerRequest } from '../shared/http/types';
import { resolveManagedProvider } from '../shared/stores/providers';
import { resolveSavedConfig } from '../shared/stores/configs';
import { getAdapter, PROVIDER_SLUGS } from '../providers/registry';
import type { ProviderAdapter, ProviderTarget } from '../providers/types';

/**
 * Spec §5.2: the four ways to name a provider. Every one of them becomes a config tree,
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

/** Cloud settings of spec §5.4 as config leaf fields. */
function cloudHeaders(h: Record<string, string>): Partial<ConfigNode> {
  const pick = (name: string) => h[name] || undefined;
  return {
    azure_resource_name: pick('x-gateway-azure-resource-name'),
    azure_deployment_id: pick('x-gateway-azure-deployment-id'),
    azure_api_version: pick('x-gateway-azure-api-version'),
    azure_model_name: pick('x-gateway-azure-model-name'),
    vertex_project_id: pick('x-gateway-vertex-project-id'),
    vertex_region: pick('x-gateway-vertex-region'),
    aws_access_key_id: pick('x-gateway-aws-access-key-id'),
    aws_secret_access_key: pick('x-gateway-aws-secret-access-key'),
    aws_session_token: pick('x-gateway-aws-session-token'),
    aws_region: pick('x-gateway-aws-region'),
  };
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
      throw badRequest(`x-gateway-config already names its providers; do not combine it with x-gateway-provider or x-gateway-virtual-key.`, 'x-gateway-config', 'contradictory_provider');
    }
    return { config: await loadConfig(rawConfig, req.auth.workspaceId), source: 'config' };
  }
  assertOneProvider(provider, virtualKey);
  if (!provider && !virtualKey && !customHost && req.auth.defaultConfig) {
    // The request names no provider: the gateway key's own default config routes it.
    return { config: await loadConfig(req.auth.defaultConfig, req.auth.workspaceId, 'default_config'), source: 'config' };
  }
  if (!provider && !virtualKey) {
    throw badRequest(customHost ? `x-gateway-custom-host needs x-gateway-provider to say which API the host speaks. ${HOW_TO}` : `No provider given. ${HOW_TO}`, 'x-gateway-provider', 'missing_provider');
  }
  const managed = Boolean(virtualKey) || Boolean(provider?.startsWith('@'));
  const virtualKeyOnly = Boolean(virtualKey) && !provider;
  // Both names are always present (one may be undefined): a literal that opens with a
  // spread of one of two shapes and then spreads cloudHeaders cost 22 µs a request in V8,
  // this one 1 µs (bench/README.md).
  const leaf: ConfigNode = {
    provider: virtualKeyOnly ? undefined : provider,
    virtual_key: virtualKeyOnly ? virtualKey : undefined,
    // A managed provider holds its own credential; the caller's Authorization (often an
    // SDK placeholder) must not replace it.
    api_key: managed ? undefined : bearer(h),
    custom_host: customHost,
    ...cloudHeaders(h),
  };
  return { config: leaf, source: 'headers' };
}

/** A config reference: inline JSON or a saved config's id or slug; `source` names it in errors. */
async function loadConfig(raw: string, workspaceId: string, source: 'x-gateway-config' | 'default_config' = 'x-gateway-config'): Promise<GatewayConfigSpec> {
  if (raw.startsWith('{')) {
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
    const message = source === 'default_config'
      ? `This gateway key's default config '${raw}' is no longer a saved config of this workspace; set another with PUT /v1/api-keys/{id}.`
      : `No saved config '${raw}' in this workspace.`;
    throw badRequest(message, source, 'config_not_found');
  }
  return parseGatewayConfig(saved.config, 'config');
}

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
      throw badRequest(`No managed provider '@${managedSlug}' in this workspace. Create it with POST /v1/providers.`, 'x-gateway-provider', 'provider_not_found');
    }
    const stored: Partial<ConfigNode> = { provider: managed.provider };
    for (const [field, value] of Object.entries(Object.assign({}, managed, managed.secrets))) {
      if (value !== null && value !== undefined && field in SETTING_FIELDS) (stored as Record<string, unknown>)[field] = value;
    }
    // Stored settings first; anything the leaf states explicitly (other than the slug) wins.
    merged = Object.assign(stored, explicitSettings(node)) as ConfigNode;
  }
  const slug = merged.provider!;
  const adapter = getAdapter(slug);
  if (!adapter) {
    throw badRequest(`Unknown provider '${slug}'. Known providers: ${PROVIDER_SLUGS.join(', ')}.`, 'x-gateway-provider', 'unknown_provider');
  }
  return { adapter, target: toTarget(merged, slug), managedProvider: managedSlug };
}

const SETTING_FIELDS = {
  api_key: 1,
  custom_host: 1,
  azure_resource_name: 1,
  azure_deployment_id: 1,
  azure_api_version: 1,
  azure_model_name: 1,
  vertex_project_id: 1,
  vertex_region: 1,
  aws_access_key_id: 1,
  aws_secret_access_key: 1,
  aws_session_token: 1,
  aws_region: 1,
} as const;

/** What a leaf states itself (defined values), without the name of its provider. */
function explicitSettings(node: ConfigNode): Partial<ConfigNode> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (value !== undefined && key !== 'provider' && key !== 'virtual_key') out[key] = value;
  }
  return out as Partial<ConfigNode>;
}

function toTarget(n: ConfigNode, provider: string): ProviderTarget {
  const has = (...values: Array<string | undefined>) => values.some((v) => v !== undefined);
  return {
    provider,
    apiKey: n.api_key,
    customHost: n.custom_host,
    ...(has(n.azure_resource_name, n.azure_deployment_id, n.azure_api_version, n.azure_model_name)
      ? { azure: { resourceName: n.azure_resource_name, deploymentId: n.azure_deployment_id, apiVersion: n.azure_api_version, modelName: n.azure_model_name } }
      : {}),
    ...(has(n.vertex_project_id, n.vertex_region) ? { vertex: { projectId: n.vertex_project_id, region: n.vertex_region } } : {}),
    ...(has(n.aws_access_key_id, n.aws_secret_access_key, n.aws_session_token, n.aws_region)
      ? { aws: { accessKeyId: n.aws_access_key_id, secretAccessKey: n.aws_secret_access_key, sessionToken: n.aws_session_token, region: n.aws_region } }
      : {}),
  };
}
