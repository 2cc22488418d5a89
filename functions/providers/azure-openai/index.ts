/**
 * Azure OpenAI, classic deployment URLs:
 * https://{resource}.openai.azure.com/openai/deployments/{deployment}/{route}?api-version=…
 * Bodies are OpenAI-shaped; the stream translator only drops Azure's annotation-only
 * chunks (empty `choices`, choices without `delta`) and fills the blank id/model fields.
 */
import { badRequest } from '../../shared/errors';
import { SETTING } from '../../shared/provider-table';
import { requireSetting, rootUrl, streamErrorFrom } from '../_shared/cloud-common';
import { invalidChunk, jsonGet, jsonPost, openAIModelList, parseJson, requireKey } from '../_shared/openai-shape';
import { withoutCacheMarks } from '../_shared/cache-marks';
import { sseTranslator } from '../_shared/sse';
import type { ChatCompletion, ChatCompletionChunk, ChatRequest, ProviderAdapter, ProviderTarget, StreamTranslator, TranslateContext, Usage } from '../types';

export const AZURE_DEFAULT_API_VERSION = '2024-10-21';
/** stream_options.include_usage exists from these api-versions on. */
const STREAM_USAGE_SINCE = '2024-09-01';
/** Microsoft Entra ID access tokens are JWTs; they go in `Authorization: Bearer`. */
const JWT = /^eyJ[\w-]*\.[\w-]+\.[\w-]*$/;

function root(target: ProviderTarget): string {
  return rootUrl(target, () => {
    const resource = requireSetting(target.azure?.resourceName, SETTING.azure_resource_name, 'Azure resource name');
    return `https://${resource.toLowerCase()}.openai.azure.com/openai`;
  });
}

function apiVersion(target: ProviderTarget): string {
  const v = target.azure?.apiVersion?.trim();
  if (!v) return AZURE_DEFAULT_API_VERSION;
  return requireSetting(v, SETTING.azure_api_version, 'Azure api-version');
}

/** The deployment header, else the body's model when it is a valid deployment name. */
function deployment(target: ProviderTarget, model?: string): string {
  const fromHeader = target.azure?.deploymentId?.trim();
  if (!fromHeader && model && SETTING.azure_deployment_id.pattern.test(model)) return model;
  return requireSetting(fromHeader, SETTING.azure_deployment_id, 'Azure deployment id');
}

function deploymentUrl(target: ProviderTarget, route: string, model?: string): string {
  return `${root(target)}/deployments/${deployment(target, model)}/${route}?api-version=${apiVersion(target)}`;
}

function authHeaders(target: ProviderTarget): Record<string, string> {
  const key = requireKey(target, 'Azure OpenAI').trim();
  return JWT.test(key) ? { authorization: `Bearer ${key}` } : { 'api-key': key };
}

type AzureChoice = Record<string, unknown> & { delta?: unknown; finish_reason?: unknown };

/** Azure SSE -> OpenAI chunks: drops annotation-only chunks, fills blank id/object/model. */
export function azureStream(ctx: TranslateContext): StreamTranslator {
  let usage: Usage | undefined;
  return sseTranslator({
    usage: () => usage,
    event(ev, out, done) {
      if (ev.data.trim() === '[DONE]') return done();
      const parsed = parseJson(ev.data);
      if (!parsed) {
        out.error = invalidChunk('Azure OpenAI');
        return;
      }
      if (parsed.error) {
        out.error = streamErrorFrom(parsed, 500);
        return;
      }
      if (parsed.usage) usage = parsed.usage as Usage;
      // Choices without a delta are content-filter annotations, unless they close the choice.
      const choices = ((parsed.choices ?? []) as AzureChoice[])
        .filter((c) => c && ((typeof c.delta === 'object' && c.delta !== null) || c.finish_reason))
        .map((c) => (c.delta ? c : { ...c, delta: {} }));
      const usageOnly = choices.length === 0 && !!parsed.usage;
      if (choices.length === 0 && !(usageOnly && ctx.includeUsage)) return;
      const { usage: chunkUsage, ...rest } = parsed;
      out.chunks.push({
        ...(rest as unknown as ChatCompletionChunk),
        id: (parsed.id as string) || ctx.id,
        object: 'chat.completion.chunk',
        created: (parsed.created as number) || ctx.created,
        model: (parsed.model as string) || ctx.model,
        choices: choices as unknown as ChatCompletionChunk['choices'],
        // Usage was requested for the logs; the caller sees it only if they asked.
        ...(ctx.includeUsage ? { usage: (chunkUsage as Usage | null | undefined) ?? null } : {}),
      });
    },
  });
}

export const azureOpenAI: ProviderAdapter = {
  slug: 'azure-openai',
  name: 'Azure OpenAI',
  requiredSettings: ['api_key', 'azure_resource_name'],
  baseUrl: root,
  models: {
    request: (target) => jsonGet(`${root(target)}/models?api-version=${apiVersion(target)}`, authHeaders(target), target),
    response: openAIModelList,
  },
  authHeaders,
  chat: {
    request(sent: ChatRequest, target) {
      const body = withoutCacheMarks(sent);
      const url = deploymentUrl(target, 'chat/completions', body.model);
      // Ask for usage on streams (for logs); the translator hides it unless the caller asked.
      const wantsUsage = body.stream === true && apiVersion(target) >= STREAM_USAGE_SINCE;
      const upstream = wantsUsage ? { ...body, stream_options: { ...(body.stream_options ?? {}), include_usage: true } } : body;
      return jsonPost(url, upstream, authHeaders(target), target);
    },
    response: (upstream) => upstream as ChatCompletion,
    stream: azureStream,
  },
  embeddings: {
    request: (body, target) => jsonPost(deploymentUrl(target, 'embeddings', body.model), body, authHeaders(target), target),
  },
  audio: {
    speech: true,
    transcriptions: true,
    translations: true,
    url(route, target) {
      if (!target.azure?.deploymentId) {
        throw badRequest(
          'Azure audio routes need the deployment: send the `x-gateway-azure-deployment-id` header.',
          'x-gateway-azure-deployment-id',
          'missing_provider_setting',
        );
      }
      return deploymentUrl(target, `audio/${route}`);
    },
  },
};
