/**
 * Bedrock embeddings through InvokeModel (POST /model/{id}/invoke), best effort for the two
 * families with a known body: Amazon Titan text embeddings (one input per call) and Cohere
 * embed (batched `texts`). Other models get a 400.
 */
import { badRequest } from '../../shared/errors';
import { bedrockPost, modelSegment, runtimeRoot } from './common';
import { encodeEmbedding, stringInputs } from '../_shared/cloud-common';
import type { Embeddings, EmbeddingsAdapter } from '../types';

interface InvokeEmbeddingResponse {
  /** Titan */
  embedding?: number[];
  inputTextTokenCount?: number;
  /** Cohere: float lists, or by type with `embedding_types`. */
  embeddings?: number[][] | { float?: number[][] };
}

/** The InvokeModel body of an embeddings request (also a batch record's `modelInput`). */
export function payloadFor(model: string, inputs: string[], body: Record<string, unknown>): Record<string, unknown> {
  if (/cohere\.embed/i.test(model)) {
    return {
      texts: inputs,
      input_type: typeof body.input_type === 'string' ? body.input_type : 'search_document',
      embedding_types: ['float'],
      ...(typeof body.truncate === 'string' ? { truncate: body.truncate } : {}),
      ...(body.dimensions ? { output_dimension: body.dimensions } : {}),
    };
  }
  if (/titan-embed/i.test(model)) {
    if (inputs.length !== 1) {
      throw badRequest('Amazon Titan embeddings take one input per request: send `input` as a single string.', 'input', 'invalid_input');
    }
    return {
      inputText: inputs[0],
      ...(body.dimensions ? { dimensions: body.dimensions } : {}),
      ...(typeof body.normalize === 'boolean' ? { normalize: body.normalize } : {}),
    };
  }
  throw badRequest(`Bedrock embeddings support Amazon Titan and Cohere embed models, not '${model.slice(0, 120)}'.`, 'model', 'unsupported_model');
}

export const bedrockEmbeddings: EmbeddingsAdapter = {
  request(body, target) {
    const payload = payloadFor(body.model, stringInputs(body.input, 'Bedrock'), body);
    return bedrockPost(`${runtimeRoot(target)}/model/${modelSegment(body.model)}/invoke`, payload, target);
  },
  response(upstream, ctx, request): Embeddings {
    const res = (upstream ?? {}) as InvokeEmbeddingResponse;
    const vectors = Array.isArray(res.embedding) ? [res.embedding] : Array.isArray(res.embeddings) ? res.embeddings : (res.embeddings?.float ?? []);
    const tokens = res.inputTextTokenCount ?? 0;
    return {
      object: 'list',
      data: vectors.map((values, index) => ({ object: 'embedding', index, embedding: encodeEmbedding(values, request?.encoding_format) })),
      model: ctx.model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    };
  },
};
