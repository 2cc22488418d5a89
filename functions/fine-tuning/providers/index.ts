/** Fine-tuning adapters by provider slug (the slugs of functions/providers/registry.ts). */
import type { FineTuningProviderKind } from '../types';
import { fireworksFineTuning } from './fireworks';
import { mistralFineTuning } from './mistral';
import { azureOpenAIFineTuning, openaiFineTuning } from './openai';
import { togetherFineTuning } from './together';
import type { FineTuningAdapter } from './types';

const ADAPTERS: Record<FineTuningProviderKind, FineTuningAdapter> = {
  openai: openaiFineTuning,
  'azure-openai': azureOpenAIFineTuning,
  'together-ai': togetherFineTuning,
  'fireworks-ai': fireworksFineTuning,
  'mistral-ai': mistralFineTuning,
};

export const FINE_TUNING_PROVIDERS = Object.keys(ADAPTERS) as FineTuningProviderKind[];

export function fineTuningAdapter(kind: string): FineTuningAdapter | undefined {
  return Object.hasOwn(ADAPTERS, kind) ? ADAPTERS[kind as FineTuningProviderKind] : undefined;
}

export type { FineTuningAdapter } from './types';
