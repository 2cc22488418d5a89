/**
 * The provider catalog: every provider, what it serves and what a request to it needs, read
 * off the registry (the adapters themselves), so `GET /v1/providers/catalog` and the table of
 * docs/providers.md cannot drift from what the gateway does.
 */
import { getAdapter } from './registry';
import { PROVIDER_SLUGS, type ProviderSettingName, type ProviderSlug } from '../shared/provider-table';
import type { ProviderAdapter, ProviderTarget } from './types';

export type CatalogRoute = 'chat' | 'embeddings' | 'rerank' | 'audio' | 'models';

export interface CatalogEntry {
  slug: ProviderSlug;
  name: string;
  /** `openai-compatible`: a declaration relayed in the OpenAI wire format; `native`: an adapter translating its own. */
  kind: 'openai-compatible' | 'native';
  routes: CatalogRoute[];
  /** Header names of the provider's own auth; `signed` when requests are signed (SigV4), `iam-token` for a token exchanged from the key. */
  auth: string[];
  required_settings: readonly ProviderSettingName[];
}

function routesOf(a: ProviderAdapter): CatalogRoute[] {
  const routes: CatalogRoute[] = [];
  if (a.chat) routes.push('chat');
  if (a.embeddings) routes.push('embeddings');
  if (a.rerank) routes.push('rerank');
  if (a.audio && (a.audio.speech || a.audio.transcriptions || a.audio.translations)) routes.push('audio');
  if (a.models !== false) routes.push('models');
  return routes;
}

/**
 * A target carrying every setting, so each adapter shows the auth headers it would send and
 * the URL it would call (docs/providers.md names the values that show in a URL).
 */
export const SAMPLE_TARGET = {
  apiKey: 'key',
  azure: { resourceName: 'resource', deploymentId: 'deployment' },
  vertex: { projectId: 'sample-project', region: 'us-central1' },
  aws: { accessKeyId: 'id', secretAccessKey: 'secret', region: 'us-east-1' },
  watsonx: { region: 'us-south', projectId: 'project' },
};

function authOf(slug: ProviderSlug, a: ProviderAdapter): string[] {
  if (a.catalogAuth) return [...a.catalogAuth];
  if (a.sign) return ['signed'];
  return Object.keys(a.authHeaders({ ...SAMPLE_TARGET, provider: slug } as ProviderTarget)).map((h) => h.toLowerCase());
}

export async function providerCatalog(): Promise<CatalogEntry[]> {
  const adapters = await Promise.all(PROVIDER_SLUGS.map(async (slug) => [slug, (await getAdapter(slug))!] as const));
  return adapters.map(([slug, a]) => {
    return {
      slug,
      name: a.name,
      kind: a.shape ?? 'native',
      routes: routesOf(a),
      auth: authOf(slug, a),
      required_settings: a.requiredSettings ?? ['api_key'],
    };
  });
}
