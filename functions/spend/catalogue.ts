import type { ProviderSlug } from '../shared/provider-table';

/**
 * The price catalogue: `@pydantic/genai-prices` (MIT, maintained by Pydantic, prices for
 * some 40 providers and their models with tiered, cached, audio and time-of-day prices).
 * It is about 830 KB of code and data and takes ~50 ms to load, so it is never part of a
 * cold start: `warmCatalogue()` starts loading it (as its own bundle chunk) when the first
 * billable request is dispatched, and pricing awaits it after the provider has answered,
 * which in practice takes longer than the load.
 *
 * The package's data is the version pinned in package.json: prices change when the
 * dependency is updated (the catalogue publishes a release whenever prices change). The
 * gateway never fetches prices at run time (`updatePrices` is not called): a Lambda has no
 * business reaching a third-party URL on the request path.
 */

export type Catalogue = typeof import('@pydantic/genai-prices');

let loading: Promise<Catalogue> | undefined;

/** Start loading the catalogue if it is not loaded yet; never throws (pricing reports a failure). */
export function warmCatalogue(): void {
  if (loading) return;
  loading = import('@pydantic/genai-prices');
  // A failed load is retried by the next request rather than remembered.
  loading.catch(() => {
    loading = undefined;
  });
}

export function loadCatalogue(): Promise<Catalogue> {
  warmCatalogue();
  return loading!;
}

/**
 * Which catalogue provider prices a gateway provider's models. A provider missing here
 * (aggregators the catalogue does not list, self-hosted servers) prices only through a
 * workspace's overrides: guessing another provider's price for the same model name would
 * be wrong more often than right.
 */
export const CATALOGUE_PROVIDER: Partial<Record<ProviderSlug, string>> = {
  openai: 'openai',
  anthropic: 'anthropic',
  'azure-openai': 'azure',
  'azure-ai': 'azure',
  bedrock: 'aws',
  'vertex-ai': 'google',
  google: 'google',
  cohere: 'cohere',
  'mistral-ai': 'mistral',
  groq: 'groq',
  'together-ai': 'together',
  deepseek: 'deepseek',
  'fireworks-ai': 'fireworks',
  openrouter: 'openrouter',
  voyage: 'voyageai',
  xai: 'x-ai',
  perplexity: 'perplexity',
  cerebras: 'cerebras',
  novita: 'novita',
  moonshot: 'moonshotai',
  zhipu: 'zhipuai',
  ovhcloud: 'ovhcloud',
  'cloudflare-workers-ai': 'cloudflare',
};

/** Vertex AI serves Anthropic's models under their Anthropic names: those are priced as Anthropic's. */
export function catalogueProviderFor(slug: string, model: string): string | undefined {
  if (slug === 'vertex-ai' && model.startsWith('claude')) return 'anthropic';
  return CATALOGUE_PROVIDER[slug as ProviderSlug];
}
