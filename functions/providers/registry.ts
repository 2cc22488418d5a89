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
import type { ProviderAdapter } from './types';
import type { ProviderSlug } from '../shared/provider-table';
// Cloud adapters (azure-openai, vertex-ai, google, bedrock): one import line each here.
import { azureAI } from './azure-ai';
import { azureOpenAI } from './azure-openai';
import { bedrock } from './bedrock';
import { google } from './google';
import { vertexAI } from './vertex-ai';

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
};

export function getAdapter(slug: string): ProviderAdapter | undefined {
  return Object.hasOwn(ADAPTERS, slug) ? ADAPTERS[slug as ProviderSlug] : undefined;
}
