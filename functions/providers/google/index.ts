/**
 * Gemini Developer API: https://generativelanguage.googleapis.com/v1beta,
 * `x-goog-api-key` auth. Chat is translated by _shared/gemini/format.ts, streams by
 * _shared/gemini/stream.ts; embeddings go through `:batchEmbedContents`, token counts through
 * `:countTokens`.
 */
import { badRequest } from '../../shared/errors';
import { encodeEmbedding, rootUrl, stringInputs } from '../_shared/cloud-common';
import { fromGeminiResponse, toGeminiRequest } from '../_shared/gemini/format';
import { geminiStream } from '../_shared/gemini/stream';
import { jsonGet, jsonPost, requireKey } from '../_shared/openai-shape';
import type { Embeddings, ProviderAdapter, ProviderTarget, UpstreamRequest } from '../types';

const DEFAULT_ROOT = 'https://generativelanguage.googleapis.com/v1beta';
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** `gemini-2.0-flash`, `models/gemini-2.0-flash` or `tunedModels/x` -> the resource path. */
export function geminiModelPath(model: string): string {
  const m = (model ?? '').trim();
  const slash = m.indexOf('/');
  if (slash < 0 && MODEL_ID.test(m)) return `models/${m}`;
  const [collection, id] = [m.slice(0, slash), m.slice(slash + 1)];
  if ((collection === 'models' || collection === 'tunedModels') && MODEL_ID.test(id)) return m;
  throw badRequest(`Invalid Gemini model '${m.slice(0, 80)}': use e.g. gemini-2.0-flash.`, 'model', 'invalid_model');
}

const root = (target: ProviderTarget) => rootUrl(target, () => DEFAULT_ROOT);

const authHeaders = (target: ProviderTarget) => ({ 'x-goog-api-key': requireKey(target, 'Google Gemini') });

const post = (url: string, body: unknown, target: ProviderTarget): UpstreamRequest => jsonPost(url, body, authHeaders(target), target);

interface BatchEmbedResponse {
  embeddings?: Array<{ values?: number[] }>;
  usageMetadata?: { promptTokenCount?: number; totalTokenCount?: number };
}

export const google: ProviderAdapter = {
  slug: 'google',
  name: 'Google Gemini',
  baseUrl: root,
  authHeaders,
  models: {
    request: (target) => jsonGet(`${root(target)}/models?pageSize=1000`, authHeaders(target), target),
    // `models/gemini-2.0-flash` -> `gemini-2.0-flash`, the name chat requests take.
    response: (upstream) =>
      ((upstream as { models?: Array<{ name?: unknown }> }).models ?? [])
        .filter((m) => typeof m.name === 'string')
        .map((m) => ({ id: (m.name as string).replace(/^models\//, ''), object: 'model', created: 0, owned_by: 'google' })),
  },
  chat: {
    request(body, target) {
      const path = geminiModelPath(body.model);
      const url = body.stream ? `${root(target)}/${path}:streamGenerateContent?alt=sse` : `${root(target)}/${path}:generateContent`;
      return post(url, toGeminiRequest(body), target);
    },
    response: fromGeminiResponse,
    stream: geminiStream,
  },
  countTokens: {
    // The whole GenerateContentRequest (system instruction and tools count too), which must name its model.
    request(body, target) {
      const path = geminiModelPath(body.model);
      return post(`${root(target)}/${path}:countTokens`, { generateContentRequest: { model: path, ...toGeminiRequest(body) } }, target);
    },
    response: (upstream) => (upstream as { totalTokens?: unknown }).totalTokens as number | undefined,
  },
  embeddings: {
    request(body, target) {
      const model = geminiModelPath(body.model);
      const requests = stringInputs(body.input, 'Gemini').map((text) => ({
        model,
        content: { parts: [{ text }] },
        ...(body.dimensions ? { outputDimensionality: body.dimensions } : {}),
        ...(typeof body.task_type === 'string' ? { taskType: body.task_type } : {}),
      }));
      return post(`${root(target)}/${model}:batchEmbedContents`, { requests }, target);
    },
    response(upstream, ctx, request): Embeddings {
      const res = (upstream ?? {}) as BatchEmbedResponse;
      const tokens = res.usageMetadata?.promptTokenCount ?? 0;
      return {
        object: 'list',
        data: (res.embeddings ?? []).map((e, index) => ({
          object: 'embedding',
          index,
          embedding: encodeEmbedding(e.values ?? [], request?.encoding_format),
        })),
        model: ctx.model,
        usage: { prompt_tokens: tokens, total_tokens: res.usageMetadata?.totalTokenCount ?? tokens },
      };
    },
  },
};
