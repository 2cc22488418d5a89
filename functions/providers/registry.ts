/** Every provider adapter by slug: the one lookup the gateway pipeline uses. */
import { anthropic } from './anthropic';
import { cohere } from './cohere';
import { deepseek } from './deepseek';
import { fireworksAi } from './fireworks-ai';
import { groq } from './groq';
import { jina } from './jina';
import { mistralAi } from './mistral-ai';
import { ollama } from './ollama';
import { openai } from './openai';
import { openrouter } from './openrouter';
import { pinecone } from './pinecone';
import { togetherAi } from './together-ai';
import { voyage } from './voyage';
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
// Cloud adapters (azure-openai, vertex-ai, google, bedrock): one import line each here.
import { azureAI } from './azure-ai';
import { azureOpenAI } from './azure-openai';
import { bedrock } from './bedrock';
import { google } from './google';
import { vertexAI } from './vertex-ai';
// Native adapters with their own wire format added for breadth.
import { replicate } from './replicate';
import { watsonx } from './watsonx';

/** Typed by the slug list: a provider without an adapter (or an adapter without a slug) does not compile. */
const ADAPTERS: Record<ProviderSlug, ProviderAdapter> = {
  openai,
  anthropic,
  cohere,
  'mistral-ai': mistralAi,
  groq,
  'together-ai': togetherAi,
  deepseek,
  'fireworks-ai': fireworksAi,
  openrouter,
  ollama,
  jina,
  voyage,
  pinecone,
  // Cloud adapters: one entry each here, e.g. `'azure-openai': azureOpenAI,`.
  'azure-openai': azureOpenAI,
  'azure-ai': azureAI,
  google,
  'vertex-ai': vertexAI,
  bedrock,
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
  watsonx,
  replicate,
};

export function getAdapter(slug: string): ProviderAdapter | undefined {
  return Object.hasOwn(ADAPTERS, slug) ? ADAPTERS[slug as ProviderSlug] : undefined;
}
