/**
 * Fake Anthropic Messages API.
 *
 * - POST /v1/messages               JSON or SSE (`event:` + `data:`; message_start …
 *                                    message_stop, ping after the first block start)
 * - POST /v1/messages/count_tokens  `{input_tokens}`
 * - POST /v1/projects/{p}/locations/{r}/publishers/anthropic/models/{m}:rawPredict and
 *   :streamRawPredict               the Vertex form (Bearer auth, `anthropic_version` in the body)
 * Auth: `x-api-key` (or `Authorization: Bearer`) -> 401 authentication_error when missing;
 * `anthropic-version` header -> 400 invalid_request_error when missing (as the real API).
 * Requests are checked like the real API: `max_tokens` required, roles only user/assistant.
 * Tool calls come after a short text block (`TOOL_PREAMBLE`), as Claude does, so the
 * tool_use block has index 1.
 */
import { answer, partsText, promptTokens, type Conversation, type Turn } from './answer';
import { arr, bearer, obj, startFake, str, type ErrorShaper, type Exchange, type FakeOptions, type FakeServer, type Frame } from './behaviour';
import { googleError } from './gemini';
import { SSE_CONTENT_TYPE, sseEvent } from './sse';

export const TOOL_PREAMBLE = 'Let me check the weather.';

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

export const anthropicError: ErrorShaper = (status, message, type) => ({
  body: {
    type: 'error',
    error: { type: type ?? ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'), message },
    request_id: 'req_fake',
  },
});

export function startAnthropicFake(options: FakeOptions = {}): Promise<FakeServer> {
  return startFake('anthropic', options, anthropicError, handle);
}

const MESSAGES_FIELDS = new Set([
  'model',
  'messages',
  'max_tokens',
  'system',
  // Automatic prompt caching: one mark for the whole request (@anthropic-ai/sdk MessageCreateParams).
  'cache_control',
  'metadata',
  'stop_sequences',
  'stream',
  'temperature',
  'top_k',
  'top_p',
  'tools',
  'tool_choice',
  'thinking',
  'service_tier',
  'container',
  'mcp_servers',
  'context_management',
  'output_config',
  'anthropic_version',
]);

const VERTEX = /^\/v1(?:beta1)?\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/anthropic\/models\/([^/:]+):(rawPredict|streamRawPredict)$/;

async function handle(ex: Exchange): Promise<void> {
  const { rec } = ex;
  const vertex = VERTEX.exec(rec.path);
  if (rec.method === 'POST' && vertex) {
    const [, project, region, model, method] = vertex;
    Object.assign(rec.params, { project: project!, region: region!, model: decodeURIComponent(model!) });
    if (!bearer(rec)) {
      const e = googleError(401, 'Request is missing required authentication credential. Expected OAuth 2 access token.');
      return ex.json(401, e.body);
    }
    const body = obj(rec.body);
    if (!str(body.anthropic_version)) return ex.error(400, 'anthropic_version: Field required');
    return messages(ex, rec.params.model!, method === 'streamRawPredict' || body.stream === true);
  }
  if (rec.method === 'GET' && rec.path === '/v1/models') return modelList(ex);
  if (rec.method !== 'POST' || (rec.path !== '/v1/messages' && rec.path !== '/v1/messages/count_tokens')) {
    if (!(await ex.begin(undefined, false))) return;
    return ex.error(404, `Not found: ${rec.method} ${rec.path}`);
  }
  const key = rec.headers['x-api-key'] ?? bearer(rec);
  if (!key) return ex.error(401, 'x-api-key header is required');
  if (ex.apiKey !== undefined && key !== ex.apiKey) return ex.error(401, 'invalid x-api-key');
  if (!rec.headers['anthropic-version']) return ex.error(400, 'anthropic-version: header is required');
  const body = obj(rec.body);
  const model = str(body.model);
  // As the API does: `system` is a string or a list of text blocks, anything else a 400.
  if (
    body.system !== undefined &&
    typeof body.system !== 'string' &&
    !(Array.isArray(body.system) && body.system.every((b) => obj(b).type === 'text' && typeof obj(b).text === 'string'))
  ) {
    return ex.error(400, 'system: Input should be a valid string or a list of text blocks');
  }
  if (rec.path.endsWith('/count_tokens')) {
    if (!(await ex.begin(model, false))) return;
    return ex.json(200, { input_tokens: promptTokens(anthropicConversation(body, model ?? '')) });
  }
  if (!model) return ex.error(400, 'model: Field required');
  return messages(ex, model, body.stream === true);
}

/** Anthropic request -> the fakes' conversation (tool_result blocks become tool turns). */
export function anthropicConversation(body: Record<string, unknown>, model: string): Conversation {
  const turns: Turn[] = [];
  const system = body.system;
  if (system !== undefined) turns.push({ role: 'system', text: partsText(system) });
  for (const m of arr(body.messages)) {
    const msg = obj(m);
    const role = str(msg.role) === 'assistant' ? 'assistant' : 'user';
    if (typeof msg.content === 'string') {
      turns.push({ role, text: msg.content });
      continue;
    }
    for (const b of arr(msg.content)) {
      const block = obj(b);
      if (block.type === 'tool_result') turns.push({ role: 'tool', text: partsText(block.content) });
      else if (block.type === 'tool_use') turns.push({ role, text: `${str(block.name)}(${JSON.stringify(block.input)})` });
      else if (block.type === 'text') turns.push({ role, text: str(block.text) ?? '' });
    }
  }
  const choice = obj(body.tool_choice);
  const tools = choice.type === 'none' ? [] : arr(body.tools).map((t) => str(obj(t).name) ?? '');
  const forceTool = choice.type === 'any' ? '' : choice.type === 'tool' ? str(choice.name) : undefined;
  const maxTokens = typeof body.max_tokens === 'number' ? body.max_tokens : undefined;
  const toolSchemas = Object.fromEntries(arr(body.tools).map((t) => [str(obj(t).name) ?? '', obj(t).input_schema]));
  return { model, turns, tools, forceTool, maxTokens, toolSchemas };
}

async function messages(ex: Exchange, model: string, stream: boolean): Promise<void> {
  if (!(await ex.begin(model, stream))) return;
  const body = obj(ex.rec.body);
  if (typeof body.max_tokens !== 'number') return ex.error(400, 'max_tokens: Field required');
  // The Messages API refuses fields it does not know (Vertex adds `anthropic_version`).
  const unknown = Object.keys(body).filter((k) => !MESSAGES_FIELDS.has(k));
  if (unknown.length) return ex.error(400, `${unknown[0]}: Extra inputs are not permitted`);
  const msgs = arr(body.messages);
  if (msgs.length === 0) return ex.error(400, 'messages: at least one message is required');
  for (const m of msgs) {
    const role = str(obj(m).role);
    if (role !== 'user' && role !== 'assistant') {
      return ex.error(
        400,
        `messages: Unexpected role "${role}". The Messages API accepts a top-level \`system\` parameter, not "${role}" as an input message role.`,
      );
    }
  }

  for (const [i, t] of arr(body.tools).entries()) {
    if (obj(obj(t).input_schema).type !== 'object') return ex.error(400, `tools.${i}.custom.input_schema.type: Input should be 'object'`);
  }
  const conv = anthropicConversation(body, model);
  const a = answer(conv);
  const inputTokens = promptTokens(conv);
  const { read = 0, write = 0, write1h = 0 } = ex.knobs.promptCache ?? {};
  // The split by cache lifetime only when a test asks for prompt-cache usage (the recorded fixtures have none).
  const cacheUsage = {
    cache_creation_input_tokens: write,
    cache_read_input_tokens: read,
    ...(ex.knobs.promptCache ? { cache_creation: { ephemeral_5m_input_tokens: write - write1h, ephemeral_1h_input_tokens: write1h } } : {}),
  };
  const id = `msg_fake${ex.rec.seq}`;
  const headers = { 'request-id': `req_fake_${ex.rec.seq}`, 'anthropic-ratelimit-requests-remaining': '999' };
  const stopReason = a.kind === 'tool' ? 'tool_use' : a.finish === 'length' ? 'max_tokens' : 'end_turn';
  const toolId = a.kind === 'tool' ? `toolu_${a.idSuffix}` : '';
  const text = a.kind === 'text' ? a.text : TOOL_PREAMBLE;
  // A forced tool call (tool_choice any / tool) comes without a text preamble, as on the real API.
  const withText = a.kind === 'text' || conv.forceTool === undefined;

  if (!stream) {
    const content: unknown[] = withText ? [{ type: 'text', text }] : [];
    if (a.kind === 'tool') content.push({ type: 'tool_use', id: toolId, name: a.name, input: a.args });
    return ex.json(
      200,
      {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content,
        stop_reason: stopReason,
        stop_sequence: null,
        usage: { input_tokens: inputTokens, output_tokens: a.completionTokens, ...cacheUsage },
      },
      headers,
    );
  }

  const frames: Frame[] = [
    sseEvent('message_start', {
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: inputTokens, output_tokens: 1, ...cacheUsage },
      },
    }),
    sseEvent('ping', { type: 'ping' }),
  ];
  if (withText) {
    frames.splice(1, 0, sseEvent('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }));
    const pieces = a.kind === 'text' ? a.pieces : text.match(/\S+\s*/g)!;
    for (const p of pieces) {
      frames.push(sseEvent('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: p } }));
    }
    frames.push(sseEvent('content_block_stop', { type: 'content_block_stop', index: 0 }));
  }
  if (a.kind === 'tool') {
    const index = withText ? 1 : 0;
    frames.push(
      sseEvent('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: toolId, name: a.name, input: {} } }),
    );
    for (const f of a.fragments) {
      frames.push(sseEvent('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: f } }));
    }
    frames.push(sseEvent('content_block_stop', { type: 'content_block_stop', index }));
  }
  frames.push(
    sseEvent('message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: a.completionTokens } }),
    sseEvent('message_stop', { type: 'message_stop' }),
  );
  await ex.stream(SSE_CONTENT_TYPE, frames, {
    headers,
    errorFrame: (type, message) => sseEvent('error', { type: 'error', error: { type: type ?? 'overloaded_error', message } }),
  });
}

export const FAKE_ANTHROPIC_MODELS = ['claude-sonnet-4-5-20250929', 'claude-haiku-4-5-20251001'];

/** GET /v1/models: Anthropic's paged list (`limit` 1..1000). */
async function modelList(ex: Exchange): Promise<void> {
  const { rec } = ex;
  const key = rec.headers['x-api-key'];
  if (!key) return ex.error(401, 'x-api-key header is required');
  if (ex.apiKey !== undefined && key !== ex.apiKey) return ex.error(401, 'invalid x-api-key');
  if (!rec.headers['anthropic-version']) return ex.error(400, 'anthropic-version: header is required');
  const limit = rec.query.limit === undefined ? 20 : Number(rec.query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) return ex.error(400, 'limit: Input should be less than or equal to 1000');
  if (!(await ex.begin(undefined, false))) return;
  const data = FAKE_ANTHROPIC_MODELS.slice(0, limit).map((id, i) => ({ type: 'model', id, display_name: id, created_at: `2025-0${i + 1}-15T00:00:00Z` }));
  ex.json(200, { data, has_more: FAKE_ANTHROPIC_MODELS.length > limit, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
}
