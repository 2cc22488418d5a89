import { describe, expect, it } from 'vitest';
import { AZURE_AI_INFERENCE_API_VERSION, azureAIInferenceUrl } from '../../../functions/providers/azure-ai';

describe('Azure AI model inference URLs', () => {
  it('default to the resource /models root with the default api-version', () => {
    expect(azureAIInferenceUrl({ provider: 'azure-ai', azure: { resourceName: 'My-Res' } }, 'chat/completions')).toBe(
      `https://my-res.services.ai.azure.com/models/chat/completions?api-version=${AZURE_AI_INFERENCE_API_VERSION}`,
    );
  });

  it('take a serverless endpoint as the custom host, and the caller api-version', () => {
    const target = { provider: 'azure-ai', customHost: 'https://llama-xyz.eastus2.models.ai.azure.com/', azure: { apiVersion: '2025-04-01' } };
    expect(azureAIInferenceUrl(target, 'embeddings')).toBe('https://llama-xyz.eastus2.models.ai.azure.com/embeddings?api-version=2025-04-01');
  });

  it('refuse a resource name that is not a DNS label', () => {
    expect(() => azureAIInferenceUrl({ provider: 'azure-ai', azure: { resourceName: 'evil.com/x' } }, 'chat/completions')).toThrow(/resource name/);
  });
});
