/** Every provider adapter by slug: the one lookup the gateway pipeline uses. */
import { deepseek } from './deepseek';
import { fireworksAi } from './fireworks-ai';
import { groq } from './groq';
import { mistralAi } from './mistral-ai';
import { ollama } from './ollama';
import { openai } from './openai';
import { openrouter } from './openrouter';
import { togetherAi } from './together-ai';
// OpenAI-compatible declarations added for breadth: one folder each.
import { xai } from './xai';
import { perplexity } from './perplexity';
import { cerebras } from './cerebras';
import { sambanova } from './sambanova';
import { nebius } from './nebius';
import { novita } from './novita';
import { hyperbolic } from './hyperbolic';
import { deepinfra } from './deepinfra';
import { huggingface } from './huggingface';
import { nvidiaNim } from './nvidia-nim';
import { githubModels } from './github-models';
import { moonshot } from './moonshot';
import { zhipu } from './zhipu';
import { dashscope } from './dashscope';
import { siliconflow } from './siliconflow';
import { ai21 } from './ai21';
import { upstage } from './upstage';
import { nscale } from './nscale';
import { featherless } from './featherless';
import { ovhcloud } from './ovhcloud';
import { scaleway } from './scaleway';
import { cloudflareWorkersAi } from './cloudflare-workers-ai';
import { wandb } from './wandb';
import { vllm } from './vllm';
import { llamaCpp } from './llama-cpp';
import { lmStudio } from './lm-studio';
import { tgi } from './tgi';
import type { ProviderAdapter } from './types';
import type { ProviderSlug } from '../shared/provider-table';

/**
 * Typed by the slug list: a provider without an adapter (or an adapter without a slug) does
 * not compile. Native adapters of rarely used providers are loaded on first use (their own
 * bundle chunk), so they do not weigh on every cold start.
 */
const ADAPTERS: Record<ProviderSlug, ProviderAdapter | (() => Promise<ProviderAdapter>)> = {
  openai,
  // On first use too: the gateway's cold-start code stays within its 250 KB (bench/README.md).
  anthropic: () => import('./anthropic').then((m) => m.anthropic),
  cohere: () => import('./cohere').then((m) => m.cohere),
  'mistral-ai': mistralAi,
  groq,
  'together-ai': togetherAi,
  deepseek,
  'fireworks-ai': fireworksAi,
  openrouter,
  ollama,
  jina: () => import('./jina').then((m) => m.jina),
  voyage: () => import('./voyage').then((m) => m.voyage),
  pinecone: () => import('./pinecone').then((m) => m.pinecone),
  // Cloud adapters: Bedrock and Google's (their formats, signing and event streams) load on first use.
  'azure-openai': () => import('./azure-openai').then((m) => m.azureOpenAI),
  'azure-ai': () => import('./azure-ai').then((m) => m.azureAI),
  google: () => import('./google').then((m) => m.google),
  'vertex-ai': () => import('./vertex-ai').then((m) => m.vertexAI),
  bedrock: () => import('./bedrock').then((m) => m.bedrock),
  // OpenAI-compatible declarations.
  xai,
  perplexity,
  cerebras,
  sambanova,
  nebius,
  novita,
  hyperbolic,
  deepinfra,
  huggingface,
  'nvidia-nim': nvidiaNim,
  'github-models': githubModels,
  moonshot,
  zhipu,
  dashscope,
  siliconflow,
  ai21,
  upstage,
  nscale,
  featherless,
  ovhcloud,
  scaleway,
  'cloudflare-workers-ai': cloudflareWorkersAi,
  wandb,
  vllm,
  'llama-cpp': llamaCpp,
  'lm-studio': lmStudio,
  tgi,
  watsonx: () => import('./watsonx').then((m) => m.watsonx),
  replicate: () => import('./replicate').then((m) => m.replicate),
};

export async function getAdapter(slug: string): Promise<ProviderAdapter | undefined> {
  if (!Object.hasOwn(ADAPTERS, slug)) return undefined;
  const entry = ADAPTERS[slug as ProviderSlug];
  if (typeof entry !== 'function') return entry;
  // Loaded once, then held in the table: an `import()` per request costs tens of microseconds.
  const adapter = await entry();
  ADAPTERS[slug as ProviderSlug] = adapter;
  return adapter;
}
