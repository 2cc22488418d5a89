/**
 * AWS Bedrock: chat through Converse / ConverseStream
 * (POST https://bedrock-runtime.{region}.amazonaws.com/model/{urlencoded id}/converse[-stream]),
 * embeddings through InvokeModel, rerank through bedrock-agent-runtime, token counts through
 * CountTokens (POST …/model/{foundation model id}/count-tokens). Requests are signed
 * last by `sign` (SigV4, service `bedrock`), which also serves the generic proxy.
 */
import { bedrockAuthHeaders, bedrockPost, bedrockSign, controlRoot, foundationModelId, modelSegment, runtimeRoot } from './common';
import { jsonGet } from '../_shared/openai-shape';
import { bedrockEmbeddings } from './embeddings';
import { fromConverseResponse, toConverseRequest } from './chat';
import { bedrockRerank } from './rerank';
import { bedrockStream } from './stream';
import type { ProviderAdapter } from '../types';

export const bedrock: ProviderAdapter = {
  slug: 'bedrock',
  name: 'AWS Bedrock',
  requiredSettings: ['aws_region', 'aws_access_key_id', 'aws_secret_access_key'],
  baseUrl: runtimeRoot,
  authHeaders: bedrockAuthHeaders,
  sign: bedrockSign,
  models: {
    request: (target) => jsonGet(`${controlRoot(target)}/foundation-models`, bedrockAuthHeaders(target), target),
    response: (upstream) =>
      ((upstream as { modelSummaries?: Array<{ modelId?: unknown; providerName?: unknown }> }).modelSummaries ?? [])
        .filter((m) => typeof m.modelId === 'string')
        .map((m) => ({
          id: m.modelId as string,
          object: 'model',
          created: 0,
          owned_by: typeof m.providerName === 'string' ? m.providerName.toLowerCase() : 'bedrock',
        })),
  },
  chat: {
    request(body, target) {
      const action = body.stream ? 'converse-stream' : 'converse';
      return bedrockPost(`${runtimeRoot(target)}/model/${modelSegment(body.model)}/${action}`, toConverseRequest(body), target);
    },
    response: fromConverseResponse,
    stream: bedrockStream,
  },
  countTokens: {
    // CountTokens takes the Converse input (messages, system, tools) and a foundation model id, not an inference profile.
    request(body, target) {
      const { messages, system, toolConfig } = toConverseRequest(body);
      const model = foundationModelId(body.model);
      return bedrockPost(`${runtimeRoot(target)}/model/${modelSegment(model)}/count-tokens`, { input: { converse: { messages, system, toolConfig } } }, target);
    },
    response: (upstream) => (upstream as { inputTokens?: unknown }).inputTokens as number | undefined,
  },
  embeddings: bedrockEmbeddings,
  rerank: bedrockRerank,
};
