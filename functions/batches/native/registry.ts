/**
 * The native batch adapters (./types.ts), by provider slug. Adding a provider's batch API:
 * implement NativeBatchAdapter in ./<provider>.ts and list it here.
 */
import type { BatchEndpoint } from '../types';
import { anthropicMessageBatches } from './anthropic';
import { bedrockBatch } from './bedrock';
import { openaiBatches } from './openai';
import type { NativeBatchAdapter } from './types';
import { vertexBatch } from './vertex';

const ADAPTERS: readonly NativeBatchAdapter[] = [openaiBatches, anthropicMessageBatches, bedrockBatch, vertexBatch];

/** The adapter that runs `endpoint` batches on provider `slug`, if there is one. */
export function nativeBatchAdapter(slug: string, endpoint?: BatchEndpoint): NativeBatchAdapter | undefined {
  return ADAPTERS.find((a) => a.providers.includes(slug) && (endpoint === undefined || a.endpoints.includes(endpoint)));
}

/** Every provider slug with a native batch adapter (named in the 400 that refuses another). */
export const nativeBatchProviders = (): string[] => [...new Set(ADAPTERS.flatMap((a) => a.providers))].sort();
