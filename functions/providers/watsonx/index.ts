/**
 * IBM watsonx.ai: chat, embeddings and the model list of its own REST API.
 *
 * - Base: `https://{region}.ml.cloud.ibm.com` (`x-gateway-watsonx-region`), or a custom
 *   host (Cloud Pak for Data, tests). Every call carries `?version=` (the API date).
 * - Chat: `POST /ml/v1/text/chat`, streamed `POST /ml/v1/text/chat_stream` (SSE, `event:
 *   message` frames with OpenAI-like chunks, no `[DONE]`). Body: `model_id`, `messages`,
 *   `project_id` or `space_id`; sampling fields keep OpenAI's names. A string `tool_choice`
 *   goes as `tool_choice_option`, a named tool as `tool_choice`. Sent: temperature, top_p,
 *   max_tokens, max_completion_tokens, n, stop, seed, frequency_penalty, presence_penalty,
 *   logprobs, top_logprobs, logit_bias, response_format, tools, reasoning_effort. Dropped
 *   (no such field): user, parallel_tool_calls, stream_options (usage comes in the last
 *   chunk and is shown to callers who asked), service_tier, store, metadata.
 * - Embeddings: `POST /ml/v1/text/embeddings`, `inputs` (strings), answer `results[].embedding`
 *   and `input_token_count`. `dimensions` is refused (the models have a fixed size).
 * - Models: `GET /ml/v1/foundation_model_specs?filters=function_text_chat`.
 * - Auth: the IBM Cloud API key is exchanged for an IAM bearer token (./iam.ts) in `sign`,
 *   at `x-gateway-watsonx-iam-url` when set (SSRF-vetted like a custom host).
 *
 * Sources: https://cloud.ibm.com/apidocs/watsonx-ai (text chat, embeddings, foundation
 * model specs); IBM's Node SDK @ibm-cloud/watsonx-ai (src/vml_v1.ts textChat, textChatStream, embedText).
 */
import { badRequest } from '../../shared/errors';
import { SETTING } from '../../shared/provider-table';
import { encodeEmbedding, requireSetting, rootUrl, stringInputs } from '../_shared/cloud-common';
import { buildHeaders, invalidChunk, jsonGet, jsonPost, makeUsage, parseJson, requireKey, textOf, usageChunk } from '../_shared/openai-shape';
import { withoutCacheMarks } from '../_shared/cache-marks';
import { sseTranslator } from '../_shared/sse';
import { providerErrorFacts } from '../_shared/error-body';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatMessage,
  ChatRequest,
  FinishReason,
  ProviderAdapter,
  ProviderTarget,
  StreamError,
  TranslateContext,
  Usage,
} from '../types';
import { DEFAULT_IAM_URL, iamToken } from './iam';

/** The API date every call sends as `version`. */
export const WATSONX_API_VERSION = '2024-05-31';

const NAME = 'IBM watsonx.ai';

const baseUrl = (target: ProviderTarget): string =>
  rootUrl(target, () => `https://${requireSetting(target.watsonx?.region, SETTING.watsonx_region, 'watsonx.ai region')}.ml.cloud.ibm.com`);

const url = (target: ProviderTarget, path: string, query = '') => `${baseUrl(target)}/ml/v1/${path}?version=${WATSONX_API_VERSION}${query}`;

/** `project_id` or `space_id`: one is required. */
function scope(target: ProviderTarget): Record<string, string> {
  const w = target.watsonx;
  if (w?.projectId?.trim()) return { project_id: requireSetting(w.projectId, SETTING.watsonx_project_id, 'watsonx.ai project id') };
  if (w?.spaceId?.trim()) return { space_id: requireSetting(w.spaceId, SETTING.watsonx_space_id, 'watsonx.ai space id') };
  throw badRequest(
    'Missing watsonx.ai project: send `x-gateway-watsonx-project-id` (or `x-gateway-watsonx-space-id`).',
    SETTING.watsonx_project_id.header,
    'missing_provider_setting',
  );
}

const SENT = [
  'temperature',
  'top_p',
  'max_tokens',
  'max_completion_tokens',
  'n',
  'stop',
  'seed',
  'frequency_penalty',
  'presence_penalty',
  'logprobs',
  'top_logprobs',
  'logit_bias',
  'response_format',
  'tools',
  'reasoning_effort',
] as const;

/** Roles as watsonx names them; its system, assistant and tool messages carry text. */
function mapMessage(m: ChatMessage): Record<string, unknown> {
  if (m.role === 'developer' || m.role === 'system') return { role: 'system', content: textOf(m.content) };
  if (m.role === 'tool') return { role: 'tool', tool_call_id: m.tool_call_id, content: textOf(m.content) };
  if (m.role === 'assistant') {
    const out: Record<string, unknown> = { role: 'assistant', content: m.content == null ? '' : textOf(m.content) };
    if (m.tool_calls?.length) out.tool_calls = m.tool_calls;
    return out;
  }
  return m;
}

export function watsonxChatBody(body: ChatRequest, target: ProviderTarget): Record<string, unknown> {
  const out: Record<string, unknown> = { model_id: body.model, messages: withoutCacheMarks(body).messages.map(mapMessage), ...scope(target) };
  for (const field of SENT) if (body[field] !== undefined && body[field] !== null) out[field] = body[field];
  if (typeof body.tool_choice === 'string') out.tool_choice_option = body.tool_choice;
  else if (body.tool_choice) out.tool_choice = body.tool_choice;
  return out;
}

/** watsonx adds `time_limit`, `cancelled` and `error` to OpenAI's finish reasons. */
function finishOf(reason: unknown): FinishReason {
  if (reason === 'length' || reason === 'time_limit') return 'length';
  if (reason === 'tool_calls' || reason === 'content_filter') return reason;
  return 'stop';
}

type WxUsage = { prompt_tokens?: number; completion_tokens?: number };
type WxMessage = { content?: string | null; tool_calls?: ChatCompletion['choices'][number]['message']['tool_calls'] };
type WxChoice = { index?: number; message?: WxMessage; delta?: WxMessage & { role?: string }; finish_reason?: string | null };
type WxChat = { id?: string; created?: number; choices?: WxChoice[]; usage?: WxUsage };

const usageOf = (u: WxUsage | undefined): Usage | undefined => (u ? makeUsage(u.prompt_tokens ?? 0, u.completion_tokens ?? 0) : undefined);

function fromChat(upstream: unknown, ctx: TranslateContext): ChatCompletion {
  const r = (upstream ?? {}) as WxChat;
  const out: ChatCompletion = {
    id: r.id || ctx.id,
    object: 'chat.completion',
    created: r.created ?? ctx.created,
    model: ctx.model,
    choices: (r.choices ?? []).map((c, i) => {
      const calls = c.message?.tool_calls;
      const message: ChatCompletion['choices'][number]['message'] = {
        role: 'assistant',
        content: calls?.length && !c.message?.content ? null : (c.message?.content ?? null),
        refusal: null,
      };
      if (calls?.length) message.tool_calls = calls;
      return { index: c.index ?? i, message, logprobs: null, finish_reason: finishOf(c.finish_reason) };
    }),
  };
  const usage = usageOf(r.usage);
  if (usage) out.usage = usage;
  return out;
}

/** `{errors:[{code,message}], status_code}`, watsonx's error body, as a stream error. */
function streamError(body: Record<string, unknown> | undefined): StreamError {
  const { message, code } = providerErrorFacts(body);
  const status = typeof body?.status_code === 'number' ? body.status_code : 502;
  return {
    status,
    message: message ?? 'watsonx.ai reported an error mid-stream.',
    type: status === 429 ? 'rate_limit_error' : 'upstream_error',
    code: code ?? null,
  };
}

function watsonxStream(ctx: TranslateContext) {
  let usage: Usage | undefined;
  let id = ctx.id;
  return sseTranslator({
    usage: () => usage,
    event(ev, out, done) {
      if (ev.data.trim() === '[DONE]') return done();
      const obj = parseJson(ev.data);
      if (ev.event === 'error' || obj?.errors) {
        out.error = streamError(obj);
        return;
      }
      if (!obj) {
        out.error = invalidChunk(NAME);
        return;
      }
      const c = obj as WxChat;
      if (c.id) id = c.id;
      usage = usageOf(c.usage) ?? usage;
      const choices = (c.choices ?? []).map((ch, i) => {
        const delta: ChatCompletionChunk['choices'][number]['delta'] = {};
        if (ch.delta?.role) delta.role = 'assistant';
        if (typeof ch.delta?.content === 'string' && ch.delta.content) delta.content = ch.delta.content;
        if (ch.delta?.tool_calls?.length) delta.tool_calls = ch.delta.tool_calls as ChatCompletionChunk['choices'][number]['delta']['tool_calls'];
        return { index: ch.index ?? i, delta, logprobs: null, finish_reason: ch.finish_reason ? finishOf(ch.finish_reason) : null };
      });
      if (!choices.length) return;
      const chunk: ChatCompletionChunk = { id, object: 'chat.completion.chunk', created: c.created ?? ctx.created, model: ctx.model, choices };
      if (ctx.includeUsage) chunk.usage = null;
      out.chunks.push(chunk);
    },
    finish(out) {
      if (ctx.includeUsage && usage) out.chunks.push(usageChunk({ ...ctx, id }, usage));
    },
  });
}

/** Every request is built unauthenticated; `sign` adds the IAM token (an exchange when none is cached). */
const authHeaders = (target: ProviderTarget): Record<string, string> => {
  requireKey(target, NAME);
  return {};
};

export const watsonx: ProviderAdapter = {
  slug: 'watsonx',
  name: NAME,
  shape: 'native',
  requiredSettings: ['api_key', 'watsonx_region', 'watsonx_project_id'],
  catalogAuth: ['iam-token'],
  baseUrl,
  authHeaders,
  async sign(req, target) {
    const token = await iamToken(requireKey(target, NAME).trim(), target.watsonx?.iamUrl?.trim() || DEFAULT_IAM_URL);
    return { ...req, headers: { ...req.headers, authorization: `Bearer ${token}` } };
  },
  chat: {
    request(body, target) {
      const req = jsonPost(url(target, body.stream ? 'text/chat_stream' : 'text/chat'), watsonxChatBody(body, target), authHeaders(target), target);
      if (body.stream) req.headers = buildHeaders({ ...req.headers, accept: 'text/event-stream' }, target);
      return req;
    },
    response: fromChat,
    stream: watsonxStream,
  },
  embeddings: {
    request(body, target) {
      if (body.dimensions !== undefined) {
        throw badRequest(`${NAME} embedding models have a fixed size: remove \`dimensions\`.`, 'dimensions', 'unsupported_parameter');
      }
      const payload = { model_id: body.model, inputs: stringInputs(body.input, NAME), ...scope(target) };
      return jsonPost(url(target, 'text/embeddings'), payload, authHeaders(target), target);
    },
    response(upstream, ctx, request) {
      const r = (upstream ?? {}) as { results?: Array<{ embedding?: number[] }>; input_token_count?: number };
      const tokens = r.input_token_count ?? 0;
      return {
        object: 'list',
        data: (r.results ?? []).map((x, index) => ({ object: 'embedding', index, embedding: encodeEmbedding(x.embedding ?? [], request?.encoding_format) })),
        model: ctx.model,
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      };
    },
  },
  models: {
    request: (target) => jsonGet(url(target, 'foundation_model_specs', '&filters=function_text_chat&limit=200'), authHeaders(target), target),
    response: (upstream) =>
      ((upstream as { resources?: Array<{ model_id?: unknown; provider?: unknown }> })?.resources ?? [])
        .filter((m) => typeof m.model_id === 'string')
        .map((m) => ({
          id: m.model_id as string,
          object: 'model' as const,
          created: 0,
          owned_by: typeof m.provider === 'string' ? m.provider.toLowerCase() : 'ibm',
        })),
  },
};
