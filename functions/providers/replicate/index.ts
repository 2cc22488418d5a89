/**
 * Replicate predictions, for chat with language models. Replicate has no OpenAI-compatible
 * endpoint: a model run is a prediction whose `input` is the model's own schema.
 *
 * - Model `owner/name` (an official model): `POST {base}/models/{owner}/{name}/predictions`;
 *   `owner/name:<version id>` (a community model version): `POST {base}/predictions` with
 *   `version`. Base `https://api.replicate.com/v1`, or a custom host. Auth: `Authorization:
 *   Bearer <token>`.
 * - Input, as LiteLLM builds it for chat models: `prompt` (the last user message, or a
 *   `User:` / `Assistant:` transcript of a longer conversation), `system_prompt` (the system
 *   and developer messages), `max_tokens`, `temperature`, `top_p`, `seed` and
 *   `stop_sequences` (comma-separated). Refused (400): tools, a `response_format` other than
 *   text, and what refuseUnhonoured refuses (`n` > 1, log probabilities, logit bias).
 *   Dropped: presence/frequency penalties, user, parallel_tool_calls, message names.
 * - Not streamed: the request sends `Prefer: wait`, so the prediction comes back finished
 *   with `output` as an array of strings (joined) and `metrics.input_token_count` /
 *   `output_token_count` as usage. A prediction still running after the wait is a 504.
 * - Streamed: `sign` creates the prediction (`stream: true`, no wait), then returns the GET of
 *   its `urls.stream` (SSE: `output` events carry text, `done` ends, `error` fails). The
 *   stream URL must be on replicate.com (or the custom host's origin) and is fetched like
 *   any custom host, SSRF rules included. Streams carry no token counts.
 *
 * Sources: https://replicate.com/docs/topics/predictions/create-a-prediction,
 * https://replicate.com/docs/topics/predictions/streaming,
 * https://replicate.com/docs/reference/http#models.predictions.create
 */
import { config } from '../../shared/config';
import { badRequest, GatewayError, type ErrorType } from '../../shared/errors';
import { readBody, sendUpstream } from '../../shared/net/http-client';
import { chunk, completion, jsonPost, makeUsage, parseJson, requireKey, resolveBase, stopList, textOf } from '../_shared/openai-shape';
import { sseTranslator } from '../_shared/sse';
import { refuseUnhonoured } from '../_shared/unhonoured';
import type { ChatRequest, ProviderAdapter, ProviderTarget, TranslateContext, UpstreamRequest } from '../types';

const NAME = 'Replicate';
const DEFAULT_BASE = 'https://api.replicate.com/v1';
const MAX_PREDICTION_BYTES = 4 * 1024 * 1024;

const baseUrl = (target: ProviderTarget) => resolveBase(target, DEFAULT_BASE);
const authHeaders = (target: ProviderTarget) => ({ authorization: `Bearer ${requireKey(target, NAME).trim()}` });

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const VERSION_ID = /^[a-f0-9]{64}$/;

/** Where a model's predictions are created, and the body fields that say which model. */
function endpoint(model: string, base: string): { url: string; version?: string } {
  const [name, version] = model.split(':', 2);
  const [owner, id, extra] = (name ?? '').split('/');
  if (!owner || !id || extra !== undefined || !SEGMENT.test(owner) || !SEGMENT.test(id) || (version !== undefined && !VERSION_ID.test(version))) {
    throw badRequest(`${NAME} models are named \`owner/name\` or \`owner/name:<64-hex version id>\`; got '${model.slice(0, 120)}'.`, 'model', 'invalid_model');
  }
  return version ? { url: `${base}/predictions`, version } : { url: `${base}/models/${owner}/${id}/predictions` };
}

/** The chat as the `prompt` / `system_prompt` input of a language model. */
export function replicateInput(body: ChatRequest): Record<string, unknown> {
  refuseUnhonoured(body, NAME);
  if (body.tools?.length) throw badRequest(`${NAME} predictions have no tool calling: remove \`tools\`.`, 'tools', 'unsupported_parameter');
  if (body.response_format && body.response_format.type !== 'text') {
    throw badRequest(`${NAME} predictions have no structured output: remove \`response_format\`.`, 'response_format', 'unsupported_parameter');
  }
  const system = body.messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => textOf(m.content));
  const turns = body.messages.filter((m) => m.role === 'user' || m.role === 'assistant' || m.role === 'tool');
  const only = turns.length === 1 && turns[0]!.role === 'user' ? textOf(turns[0]!.content) : undefined;
  const label = { user: 'User', assistant: 'Assistant', tool: 'Tool' } as const;
  const prompt = only ?? `${turns.map((m) => `${label[m.role as keyof typeof label]}: ${textOf(m.content as unknown)}`).join('\n')}\nAssistant:`;
  const input: Record<string, unknown> = { prompt };
  if (system.length) input.system_prompt = system.join('\n\n');
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  if (maxTokens !== undefined) input.max_tokens = maxTokens;
  if (typeof body.temperature === 'number') input.temperature = body.temperature;
  if (typeof body.top_p === 'number') input.top_p = body.top_p;
  if (body.seed !== undefined) input.seed = body.seed;
  const stop = stopList(body.stop);
  if (stop?.length) input.stop_sequences = stop.join(',');
  return input;
}

type Prediction = {
  id?: string;
  status?: string;
  output?: unknown;
  error?: unknown;
  metrics?: { input_token_count?: number; output_token_count?: number };
  urls?: { stream?: string };
};

const outputText = (output: unknown): string =>
  Array.isArray(output) ? output.map((p) => (typeof p === 'string' ? p : '')).join('') : typeof output === 'string' ? output : '';

const TYPES: Record<number, ErrorType> = { 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error', 429: 'rate_limit_error' };

/** Replicate's problem+json error (`{title, detail, status}`) as a GatewayError. */
function problem(status: number, body: Record<string, unknown>): GatewayError {
  const detail = typeof body.detail === 'string' ? body.detail : typeof body.title === 'string' ? body.title : `HTTP ${status}`;
  const type = TYPES[status] ?? (status < 500 ? 'invalid_request_error' : 'upstream_error');
  return new GatewayError(status, type, `${NAME}: ${detail}`, null, 'provider_error');
}

/** The stream URL a prediction names, when it is Replicate's (or on the custom host's origin). */
function streamUrl(prediction: Prediction, createdAt: string): string {
  const raw = prediction.urls?.stream;
  if (typeof raw !== 'string') {
    throw badRequest(`${NAME} gave no stream for this model: send the request without \`stream\`.`, 'stream', 'stream_unsupported');
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new GatewayError(502, 'upstream_error', `${NAME} named a stream URL that is not a URL.`, null, 'invalid_upstream_response');
  }
  const replicate = url.protocol === 'https:' && (url.hostname === 'replicate.com' || url.hostname.endsWith('.replicate.com'));
  if (!replicate && url.origin !== new URL(createdAt).origin) {
    throw new GatewayError(
      502,
      'upstream_error',
      `${NAME} named a stream URL off replicate.com (${url.hostname}); it is not followed.`,
      null,
      'invalid_upstream_response',
    );
  }
  return url.toString();
}

/** Streamed chats: create the prediction now and hand the pipeline the GET of its event stream. */
async function openStream(req: UpstreamRequest, target: ProviderTarget): Promise<UpstreamRequest> {
  const res = await sendUpstream({ ...req, timeoutMs: config().defaultUpstreamTimeoutMs, trustedHosts: config().trustedHosts, param: 'x-gateway-custom-host' });
  const text = (await readBody(res.body, MAX_PREDICTION_BYTES)).toString('utf8');
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    if (res.status < 300)
      throw new GatewayError(502, 'upstream_error', `${NAME} returned a prediction that is not valid JSON.`, null, 'invalid_upstream_response');
  }
  if (res.status >= 300) throw problem(res.status, body);
  return {
    url: streamUrl(body as Prediction, req.url),
    method: 'GET',
    headers: { accept: 'text/event-stream', 'cache-control': 'no-store', ...authHeaders(target) },
  };
}

function replicateStream(ctx: TranslateContext) {
  let started = false;
  return sseTranslator({
    usage: () => undefined,
    event(ev, out, done) {
      if (ev.event === 'output') {
        if (!started) out.chunks.push(chunk(ctx, { role: 'assistant', content: '' }));
        started = true;
        if (ev.data) out.chunks.push(chunk(ctx, { content: ev.data }));
        return;
      }
      if (ev.event === 'error') {
        let detail = ev.data;
        try {
          const parsed = JSON.parse(ev.data) as { detail?: unknown };
          if (typeof parsed.detail === 'string') detail = parsed.detail;
        } catch {
          // plain text detail
        }
        out.error = { status: 502, message: `${NAME}: ${detail || 'the prediction failed'}`, type: 'upstream_error', code: 'prediction_failed' };
        return;
      }
      if (ev.event === 'done') {
        const reason = (parseJson(ev.data) as { reason?: unknown } | undefined)?.reason;
        if (reason === 'error' || reason === 'canceled') {
          out.error = { status: 502, message: `${NAME}: the prediction ended with '${String(reason)}'.`, type: 'upstream_error', code: 'prediction_failed' };
          return;
        }
        if (!started) out.chunks.push(chunk(ctx, { role: 'assistant', content: '' }));
        out.chunks.push(chunk(ctx, {}, 'stop'));
        done();
      }
    },
  });
}

export const replicate: ProviderAdapter = {
  slug: 'replicate',
  name: NAME,
  shape: 'native',
  catalogAuth: ['authorization'],
  baseUrl,
  authHeaders,
  models: false,
  async sign(req, target) {
    const streaming = req.method === 'POST' && typeof req.body === 'string' && parseJson(req.body)?.stream === true;
    return streaming ? openStream(req, target) : req;
  },
  chat: {
    request(body, target) {
      const { url, version } = endpoint(body.model, baseUrl(target));
      const payload: Record<string, unknown> = { ...(version ? { version } : {}), input: replicateInput(body) };
      if (body.stream) return jsonPost(url, { ...payload, stream: true }, authHeaders(target), target);
      const req = jsonPost(url, payload, authHeaders(target), target);
      req.headers.prefer = 'wait';
      return req;
    },
    response(upstream, ctx) {
      const p = (upstream ?? {}) as Prediction;
      if (p.status === 'failed' || p.status === 'canceled') {
        const why = typeof p.error === 'string' ? p.error : p.status;
        throw new GatewayError(
          502,
          'upstream_error',
          `${NAME}: the prediction ${p.status === 'failed' ? `failed: ${why}` : 'was canceled'}.`,
          null,
          'prediction_failed',
        );
      }
      if (p.status !== 'succeeded') {
        throw new GatewayError(
          504,
          'timeout_error',
          `${NAME}: prediction ${p.id ?? ''} is still ${p.status ?? 'running'} after the wait; try streaming.`,
          null,
          'prediction_incomplete',
        );
      }
      const m = p.metrics;
      const usage =
        m && (m.input_token_count !== undefined || m.output_token_count !== undefined)
          ? makeUsage(m.input_token_count ?? 0, m.output_token_count ?? 0)
          : undefined;
      return completion(ctx, { id: p.id, content: outputText(p.output), finish: 'stop', usage });
    },
    stream: replicateStream,
  },
};
