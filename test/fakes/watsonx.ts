/**
 * Fake IBM watsonx.ai, IAM token service included, speaking the real wire formats:
 *
 * - POST /identity/token             form `grant_type=urn:ibm:params:oauth:grant-type:apikey&apikey=…`
 *                                    -> `{access_token, expires_in, expiration, token_type}`; a wrong
 *                                    key is IAM's 400 `BXNIM0415E`
 * - POST /ml/v1/text/chat            `{model_id, messages, project_id|space_id, …}` -> `{id, model_id,
 *                                    choices[{message, finish_reason}], usage}`
 * - POST /ml/v1/text/chat_stream     the same chunks as SSE (`id:`, `event: message`), usage in the
 *                                    last one, no `[DONE]`
 * - POST /ml/v1/text/embeddings      `{model_id, inputs, project_id|space_id}` -> `{results[{embedding}],
 *                                    input_token_count}`
 * - GET  /ml/v1/foundation_model_specs  `{resources[{model_id, provider}]}`
 *
 * Every /ml/v1 call needs `?version=YYYY-MM-DD` and `Authorization: Bearer <a token this fake
 * issued, not expired>`; chat and embeddings need exactly one of `project_id` and `space_id`.
 * Like the real API, a string `tool_choice` is refused (strings go in `tool_choice_option`),
 * and so is OpenAI's `model` field (watsonx names it `model_id`). Errors are
 * `{errors:[{code, message}], trace, status_code}`.
 */
import { answer, embed, promptTokens, type Conversation } from './answer';
import { bearer, obj, startFake, str, type ErrorShaper, type Exchange, type FakeOptions, type FakeServer, type Frame } from './behaviour';
import { openaiConversation } from './openai';
import { SSE_CONTENT_TYPE } from './sse';

export const watsonxError: ErrorShaper = (status, message, type) => ({
  body: {
    errors: [{ code: type ?? (status === 401 ? 'authentication_token_not_valid' : status === 404 ? 'not_found' : 'invalid_input_argument'), message }],
    trace: 'fake-trace',
    status_code: status,
  },
});

export const FAKE_WATSONX_MODELS = ['ibm/granite-3-8b-instruct', 'meta-llama/llama-3-3-70b-instruct', 'ibm/slate-125m-english-rtrvr'];

export interface WatsonxFakeOptions extends FakeOptions {
  /** Lifetime of issued IAM tokens (default 3600 s). */
  tokenTtlSeconds?: number;
}

export function startWatsonxFake(options: WatsonxFakeOptions = {}): Promise<FakeServer> {
  const tokens = new Map<string, number>();
  let issued = 0;

  async function handle(ex: Exchange): Promise<void> {
    const { rec } = ex;
    if (rec.method === 'POST' && rec.path.endsWith('/identity/token')) return token(ex);
    if (!(await ex.begin(str(obj(rec.body).model_id), rec.path.endsWith('/chat_stream')))) return;
    const auth = bearer(rec);
    const expires = auth ? tokens.get(auth) : undefined;
    if (!auth || expires === undefined || expires <= Date.now() / 1000) {
      return ex.error(401, 'Failed to authenticate the request due to invalid token: the token is missing, unknown or expired.');
    }
    if (!/^\d{4}-\d{2}-\d{2}$/.test(rec.query.version ?? '')) return ex.error(400, 'Missing query parameter `version`.', 'missing_argument');
    if (rec.method === 'GET' && rec.path.endsWith('/ml/v1/foundation_model_specs')) return specs(ex);
    if (rec.method !== 'POST') return ex.error(404, `No route for ${rec.method} ${rec.path}`);
    const body = obj(rec.body);
    const scoped = [body.project_id, body.space_id].filter((v) => typeof v === 'string' && v).length;
    if (scoped !== 1) return ex.error(400, 'Exactly one of project_id or space_id must be specified.', 'invalid_request_entity');
    if (typeof body.model_id !== 'string') return ex.error(400, 'Missing required field `model_id`.', 'json_validation_error');
    if (rec.path.endsWith('/ml/v1/text/embeddings')) return embeddings(ex, body);
    const streaming = rec.path.endsWith('/ml/v1/text/chat_stream');
    if (!streaming && !rec.path.endsWith('/ml/v1/text/chat')) return ex.error(404, `No route for POST ${rec.path}`);
    if ('model' in body) return ex.error(400, 'Unknown field `model`: the model is named by `model_id`.', 'json_validation_error');
    if (typeof body.tool_choice === 'string')
      return ex.error(400, '`tool_choice` must be an object; send strings as `tool_choice_option`.', 'json_validation_error');
    if (!Array.isArray(body.messages) || body.messages.length === 0) return ex.error(400, 'Missing required field `messages`.', 'json_validation_error');
    return chat(ex, body, streaming);
  }

  function token(ex: Exchange): Promise<void> | void {
    const form = new URLSearchParams(ex.rec.rawBody.toString('utf8'));
    const iamError = (status: number, errorCode: string, errorMessage: string) =>
      ex.json(status, { errorCode, errorMessage, context: { requestId: `fake-${ex.rec.seq}` } });
    if (!(ex.rec.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
      return iamError(400, 'BXNIM0109E', 'Property missing or empty. Operation not supported. Unsupported content type.');
    }
    if (form.get('grant_type') !== 'urn:ibm:params:oauth:grant-type:apikey') return iamError(400, 'BXNIM0103E', 'Unsupported grant type.');
    const key = form.get('apikey');
    if (!key || (options.apiKey !== undefined && key !== options.apiKey)) return iamError(400, 'BXNIM0415E', 'Provided API key could not be found.');
    const ttl = options.tokenTtlSeconds ?? 3600;
    const now = Math.floor(Date.now() / 1000);
    const value = `wx-iam-${++issued}-${key.length}`;
    tokens.set(value, now + ttl);
    ex.json(200, { access_token: value, refresh_token: 'not_supported', token_type: 'Bearer', expires_in: ttl, expiration: now + ttl, scope: 'ibm openid' });
  }

  return startFake('watsonx', options, watsonxError, handle);
}

function conversationOf(body: Record<string, unknown>): Conversation {
  const choice = body.tool_choice ?? body.tool_choice_option;
  return openaiConversation({ ...body, tool_choice: choice }, String(body.model_id));
}

async function chat(ex: Exchange, body: Record<string, unknown>, streaming: boolean): Promise<void> {
  const conv = conversationOf(body);
  const a = answer(conv);
  const prompt = promptTokens(conv);
  const usage = { prompt_tokens: prompt, completion_tokens: a.completionTokens, total_tokens: prompt + a.completionTokens };
  const id = `chatcmpl-wx-${ex.rec.seq}`;
  const created = Math.floor(Date.now() / 1000);
  const model = String(body.model_id);
  const call = a.kind === 'tool' ? { id: `chatcmpl-tool-${a.idSuffix}`, type: 'function' as const } : undefined;
  const head = { id, model_id: model, model, created, created_at: new Date(created * 1000).toISOString() };
  if (!streaming) {
    const message =
      a.kind === 'text'
        ? { role: 'assistant', content: a.text }
        : { role: 'assistant', tool_calls: [{ ...call, function: { name: a.name, arguments: a.argsJson } }] };
    return ex.json(200, {
      ...head,
      choices: [{ index: 0, message, finish_reason: a.kind === 'text' ? a.finish : 'tool_calls' }],
      usage,
      system: { warnings: [{ message: 'This model is a Non-IBM Product governed by a third-party license.', id: 'disclaimer_warning' }] },
    });
  }
  const frames: Frame[] = [];
  const event = (delta: Record<string, unknown>, finish: string | null, extra: Record<string, unknown> = {}) =>
    frames.push(
      `id: ${frames.length + 1}\nevent: message\ndata: ${JSON.stringify({ ...head, choices: [{ index: 0, finish_reason: finish, delta }], ...extra })}\n\n`,
    );
  if (a.kind === 'text') {
    event({ role: 'assistant', content: '' }, null);
    a.pieces.forEach((p) => event({ content: p }, null));
    event({ content: '' }, a.finish, { usage });
  } else {
    event({ role: 'assistant', tool_calls: [{ index: 0, ...call, function: { name: a.name, arguments: '' } }] }, null);
    a.fragments.forEach((f) => event({ tool_calls: [{ index: 0, function: { arguments: f } }] }, null));
    event({}, 'tool_calls', { usage });
  }
  await ex.stream(SSE_CONTENT_TYPE, frames, {
    errorFrame: (type, message) => `id: ${frames.length + 1}\nevent: error\ndata: ${JSON.stringify(watsonxError(500, message, type).body)}\n\n`,
  });
}

function embeddings(ex: Exchange, body: Record<string, unknown>): void {
  const inputs = body.inputs;
  if (!Array.isArray(inputs) || inputs.length === 0 || !inputs.every((s) => typeof s === 'string')) {
    ex.error(400, '`inputs` must be a non-empty array of strings.', 'json_validation_error');
    return;
  }
  const results = inputs.map((text) => ({ embedding: embed(text as string, 8) }));
  const tokens = inputs.reduce<number>((n, t) => n + ((t as string).match(/\S+/g)?.length ?? 0), 0);
  ex.json(200, { model_id: body.model_id, results, created_at: new Date().toISOString(), input_token_count: tokens });
}

function specs(ex: Exchange): void {
  ex.json(200, {
    total_count: FAKE_WATSONX_MODELS.length,
    limit: 200,
    resources: FAKE_WATSONX_MODELS.map((model_id) => ({
      model_id,
      label: model_id.split('/')[1],
      provider: model_id.startsWith('ibm/') ? 'IBM' : 'Meta',
      functions: [{ id: 'text_chat' }],
    })),
  });
}
