/**
 * Vertex AI Gemini:
 * https://{region}-aiplatform.googleapis.com/v1/projects/{project}/locations/{region}/publishers/google/models/{model}:generateContent
 * (`global` -> aiplatform.googleapis.com), `Authorization: Bearer <OAuth access token>`.
 * The body is the Gemini one (_shared/gemini/format.ts), with a role on every content. The model
 * may be a bare id, `publishers/google/models/x` or `projects/p/locations/l/…/models/x`
 *; the full form supplies project and region. Embeddings use `:predict`.
 */
import { badRequest } from '../../shared/errors';
import { SETTING } from '../../shared/provider-table';
import { encodeEmbedding, requireSetting, rootUrl, stringInputs } from '../_shared/cloud-common';
import { fromGeminiResponse, toGeminiRequest } from '../_shared/gemini/format';
import { geminiStream } from '../_shared/gemini/stream';
import { jsonPost, requireKey } from '../_shared/openai-shape';
import type { Embeddings, ProviderAdapter, ProviderTarget, UpstreamRequest } from '../types';

const PROJECT = SETTING.vertex_project_id.pattern;
const REGION = SETTING.vertex_region.pattern;
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;
const FULL_NAME = /^projects\/([^/]+)\/locations\/([^/]+)\/(publishers\/[^/]+\/models\/[^/]+|endpoints\/[^/]+)$/;

interface VertexModel {
  project?: string;
  region?: string;
  /** `publishers/google/models/{id}` or `endpoints/{id}` (tuned models). */
  resource: string;
}

export function parseVertexModel(model: string): VertexModel {
  const m = (model ?? '').trim();
  const full = FULL_NAME.exec(m);
  const resource = full ? full[3]! : m.startsWith('publishers/') ? m : `publishers/google/models/${m}`;
  const segments = resource.split('/');
  const [kind, a, b, id] = segments;
  const valid =
    (segments.length === 4 && kind === 'publishers' && a === 'google' && b === 'models' && MODEL_ID.test(id!)) ||
    (segments.length === 2 && kind === 'endpoints' && MODEL_ID.test(a!));
  if (!valid) {
    const partner = kind === 'publishers' && a !== 'google';
    throw badRequest(
      partner
        ? `Only Google (Gemini) models are translated on Vertex AI; call partner models through the generic proxy.`
        : `Invalid Vertex AI model '${m.slice(0, 120)}': use e.g. gemini-2.0-flash or projects/{p}/locations/{r}/publishers/google/models/{id}.`,
      'model',
      'invalid_model',
    );
  }
  if (full && !(PROJECT.test(full[1]!) && REGION.test(full[2]!))) {
    throw badRequest(`Invalid project or location in the Vertex AI model name '${m.slice(0, 120)}'.`, 'model', 'invalid_model');
  }
  return full ? { project: full[1], region: full[2], resource } : { resource };
}

function location(target: ProviderTarget, model?: VertexModel): { project: string; region: string } {
  return {
    project: requireSetting(model?.project ?? target.vertex?.projectId, SETTING.vertex_project_id, 'Vertex AI project id'),
    region: requireSetting(model?.region ?? target.vertex?.region, SETTING.vertex_region, 'Vertex AI region'),
  };
}

export function locationUrl(target: ProviderTarget, model?: VertexModel): string {
  const { project, region } = location(target, model);
  const host = region === 'global' ? 'aiplatform.googleapis.com' : `${region}-aiplatform.googleapis.com`;
  return `${rootUrl(target, () => `https://${host}/v1`)}/projects/${project}/locations/${region}`;
}

function modelUrl(target: ProviderTarget, model: string, method: string): string {
  const parsed = parseVertexModel(model);
  return `${locationUrl(target, parsed)}/${parsed.resource}:${method}`;
}

/** The key is an OAuth2 access token (scope cloud-platform). */
export const authHeaders = (target: ProviderTarget) => ({ authorization: `Bearer ${requireKey(target, 'Vertex AI')}` });

const post = (url: string, body: unknown, target: ProviderTarget): UpstreamRequest => jsonPost(url, body, authHeaders(target), target);

interface PredictResponse {
  predictions?: Array<{ embeddings?: { values?: number[]; statistics?: { token_count?: number } } }>;
}

export const vertexAI: ProviderAdapter = {
  slug: 'vertex-ai',
  name: 'Google Vertex AI',
  requiredSettings: ['api_key', 'vertex_project_id', 'vertex_region'],
  // Selects dedicated vs shared (Provisioned Throughput) capacity; docs/api.md
  callerHeaders: ['x-vertex-ai-llm-request-type'],
  baseUrl: (target) => locationUrl(target),
  authHeaders,
  // Model Garden lists publishers' models through a different API and IAM scope.
  models: false,
  chat: {
    request(body, target) {
      const url = body.stream ? `${modelUrl(target, body.model, 'streamGenerateContent')}?alt=sse` : modelUrl(target, body.model, 'generateContent');
      return post(url, toGeminiRequest(body), target);
    },
    response: fromGeminiResponse,
    stream: geminiStream,
  },
  countTokens: {
    // Vertex AI's countTokens takes the request's fields at the top level.
    request(body, target) {
      const { contents, systemInstruction, tools, generationConfig } = toGeminiRequest(body) as Record<string, unknown>;
      return post(modelUrl(target, body.model, 'countTokens'), { contents, systemInstruction, tools, generationConfig }, target);
    },
    response: (upstream) => (upstream as { totalTokens?: unknown }).totalTokens as number | undefined,
  },
  embeddings: {
    request(body, target) {
      const instances = stringInputs(body.input, 'Vertex AI').map((content) => ({
        content,
        ...(typeof body.task_type === 'string' ? { task_type: body.task_type } : {}),
      }));
      const parameters = body.dimensions ? { outputDimensionality: body.dimensions } : {};
      return post(modelUrl(target, body.model, 'predict'), { instances, parameters }, target);
    },
    response(upstream, ctx, request): Embeddings {
      const predictions = ((upstream ?? {}) as PredictResponse).predictions ?? [];
      const tokens = predictions.reduce((sum, p) => sum + (p.embeddings?.statistics?.token_count ?? 0), 0);
      return {
        object: 'list',
        data: predictions.map((p, index) => ({
          object: 'embedding',
          index,
          embedding: encodeEmbedding(p.embeddings?.values ?? [], request?.encoding_format),
        })),
        model: ctx.model,
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      };
    },
  },
};
