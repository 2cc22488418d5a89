/**
 * Fake Cohere v2. Auth: `Authorization: Bearer`, else 401.
 *
 * - POST /v2/chat    JSON or SSE (`event:` + `data:`, JSON `type` = event name): message-start,
 *                    content-start/delta/end, or tool-plan-delta + tool-call-start/delta/end,
 *                    then message-end with finish_reason and usage
 * - POST /v2/embed   `embeddings_by_type` (float, int8, uint8, base64); `input_type` required
 * - POST /v2/rerank  results sorted by relevance_score, `top_n`, `return_documents` accepted
 * Errors: `{id, message}`.
 */
import { answer, embed, embedBase64, partsText, promptTokens, rank, wordCount, type Conversation, type Turn } from './answer';
import { arr, bearer, obj, startFake, str, type ErrorShaper, type Exchange, type FakeOptions, type FakeServer, type Frame } from './behaviour';
import { SSE_CONTENT_TYPE, sseEvent } from './sse';

export const cohereError: ErrorShaper = (_status, message) => ({ body: { id: 'fake-error', message } });

export const TOOL_PLAN = 'I will look up the weather.';

const META = { api_version: { version: '2' } };

export function startCohereFake(options: FakeOptions = {}): Promise<FakeServer> {
  return startFake('cohere', options, cohereError, handle);
}

async function handle(ex: Exchange): Promise<void> {
  const { rec } = ex;
  const routes: Record<string, (ex: Exchange) => Promise<void>> = { '/v2/chat': chat, '/v2/embed': embedRoute, '/v2/rerank': rerankRoute };
  const route = rec.method === 'POST' ? routes[rec.path] : rec.method === 'GET' && rec.path === '/v1/models' ? modelList : undefined;
  if (!route) {
    if (!(await ex.begin(undefined, false))) return;
    return ex.error(404, `Not found: ${rec.method} ${rec.path}`);
  }
  const token = bearer(rec);
  if (!token || (ex.apiKey !== undefined && token !== ex.apiKey)) return ex.error(401, 'invalid api token');
  return route(ex);
}

function contentText(content: unknown): string {
  if (!Array.isArray(content)) return partsText(content);
  return content
    .map((c) => {
      const part = obj(c);
      if (typeof part.text === 'string') return part.text;
      if (part.type === 'document') {
        const data = obj(part.document).data;
        return typeof data === 'string' ? data : JSON.stringify(data);
      }
      return '';
    })
    .filter(Boolean)
    .join(' ');
}

/** Cohere chat request -> the fakes' conversation. */
export function cohereConversation(body: Record<string, unknown>, model: string): Conversation {
  const turns: Turn[] = arr(body.messages).map((m) => {
    const msg = obj(m);
    const role = str(msg.role) ?? 'user';
    const calls = arr(msg.tool_calls).map((c) => `${str(obj(obj(c).function).name)}(${str(obj(obj(c).function).arguments) ?? ''})`);
    return { role: role as Turn['role'], text: [contentText(msg.content), ...calls].filter(Boolean).join(' ') };
  });
  const tools = body.tool_choice === 'NONE' ? [] : arr(body.tools).map((t) => str(obj(obj(t).function).name) ?? '');
  const forceTool = body.tool_choice === 'REQUIRED' ? '' : undefined;
  const format = obj(body.response_format);
  const jsonSchema = format.type === 'json_object' ? (format.json_schema ?? { type: 'object' }) : undefined;
  return { model, turns, tools, forceTool, maxTokens: typeof body.max_tokens === 'number' ? body.max_tokens : undefined, jsonSchema };
}

async function chat(ex: Exchange): Promise<void> {
  const body = obj(ex.rec.body);
  const model = str(body.model);
  const stream = body.stream === true;
  if (!(await ex.begin(model, stream))) return;
  if (!model) return ex.error(400, 'invalid request: model must be specified');
  const messages = arr(body.messages);
  if (messages.length === 0) return ex.error(400, 'invalid request: messages must be non-empty');
  for (const m of messages) {
    const role = str(obj(m).role);
    if (!role || !['system', 'user', 'assistant', 'tool'].includes(role)) return ex.error(400, `invalid request: invalid role "${String(role)}"`);
  }
  const conv = cohereConversation(body, model);
  const a = answer(conv);
  const input = promptTokens(conv);
  const usage = {
    billed_units: { input_tokens: input, output_tokens: a.completionTokens },
    tokens: { input_tokens: input, output_tokens: a.completionTokens },
  };
  const id = `fake-chat-${ex.rec.seq}`;
  const finish = a.kind === 'tool' ? 'TOOL_CALL' : a.finish === 'length' ? 'MAX_TOKENS' : 'COMPLETE';
  const call = a.kind === 'tool' ? { id: `${a.name}_${a.idSuffix}`, type: 'function' } : undefined;

  if (!stream) {
    const message =
      a.kind === 'text'
        ? { role: 'assistant', content: [{ type: 'text', text: a.text }] }
        : { role: 'assistant', tool_plan: TOOL_PLAN, tool_calls: [{ ...call, function: { name: a.name, arguments: a.argsJson } }] };
    return ex.json(200, { id, finish_reason: finish, message, usage });
  }

  const ev = (type: string, payload: Record<string, unknown> = {}) => sseEvent(type, { type, ...payload });
  const frames: Frame[] = [ev('message-start', { id, delta: { message: { role: 'assistant', content: [], tool_plan: '', tool_calls: [], citations: [] } } })];
  if (a.kind === 'text') {
    frames.push(ev('content-start', { index: 0, delta: { message: { content: { type: 'text', text: '' } } } }));
    for (const p of a.pieces) frames.push(ev('content-delta', { index: 0, delta: { message: { content: { text: p } } } }));
    frames.push(ev('content-end', { index: 0 }));
  } else {
    for (const p of TOOL_PLAN.match(/\S+\s*/g)!) frames.push(ev('tool-plan-delta', { delta: { message: { tool_plan: p } } }));
    frames.push(ev('tool-call-start', { index: 0, delta: { message: { tool_calls: { ...call, function: { name: a.name, arguments: '' } } } } }));
    for (const f of a.fragments) frames.push(ev('tool-call-delta', { index: 0, delta: { message: { tool_calls: { function: { arguments: f } } } } }));
    frames.push(ev('tool-call-end', { index: 0 }));
  }
  // The id comes with message-start only, as in Cohere's published streams.
  frames.push(ev('message-end', { delta: { finish_reason: finish, usage } }));
  await ex.stream(SSE_CONTENT_TYPE, frames, {
    errorFrame: (type, message) => ev('message-end', { delta: { finish_reason: type ?? 'ERROR', error: message, usage } }),
  });
}

async function embedRoute(ex: Exchange): Promise<void> {
  const body = obj(ex.rec.body);
  const model = str(body.model);
  if (!(await ex.begin(model, false))) return;
  if (!model) return ex.error(400, 'invalid request: model must be specified');
  if (!str(body.input_type) && !/v2/.test(model)) {
    return ex.error(400, 'invalid request: valid input_type must be provided with the provided model');
  }
  const inputs = arr(body.inputs).map((i) => contentText(obj(i).content));
  const texts = arr(body.texts).map((t) => String(t));
  const all = texts.length ? texts : inputs;
  if (all.length === 0) return ex.error(400, 'invalid request: texts, images or inputs must be provided');
  const size = typeof body.output_dimension === 'number' ? body.output_dimension : 8;
  const vectors = all.map((t) => embed(t, size));
  const types = arr(body.embedding_types).map(String);
  const embeddings: Record<string, unknown> = {};
  for (const type of types.length ? types : ['float']) {
    if (type === 'int8') embeddings.int8 = vectors.map((v) => v.map((x) => Math.round(x * 127)));
    else if (type === 'uint8') embeddings.uint8 = vectors.map((v) => v.map((x) => Math.round((x + 1) * 127.5)));
    else if (type === 'base64') embeddings.base64 = vectors.map(embedBase64);
    else embeddings.float = vectors;
  }
  const tokens = all.reduce((n, t) => n + wordCount(t), 0);
  ex.json(200, {
    id: `fake-embed-${ex.rec.seq}`,
    response_type: 'embeddings_by_type',
    embeddings,
    texts: texts.length ? texts : undefined,
    meta: { ...META, billed_units: { input_tokens: tokens } },
  });
}

async function rerankRoute(ex: Exchange): Promise<void> {
  const body = obj(ex.rec.body);
  const model = str(body.model);
  if (!(await ex.begin(model, false))) return;
  if (!model) return ex.error(400, 'invalid request: model must be specified');
  const query = str(body.query);
  const docs = arr(body.documents).map((d) => (typeof d === 'string' ? d : (str(obj(d).text) ?? JSON.stringify(d))));
  if (query === undefined) return ex.error(400, 'invalid request: query must be specified');
  if (docs.length === 0) return ex.error(400, 'invalid request: documents must be non-empty');
  const topN = typeof body.top_n === 'number' ? body.top_n : undefined;
  const withDocs = body.return_documents === true;
  const results = rank(query, docs, topN).map((r) => ({
    index: r.index,
    relevance_score: r.score,
    ...(withDocs ? { document: { text: docs[r.index] } } : {}),
  }));
  ex.json(200, { id: `fake-rerank-${ex.rec.seq}`, results, meta: { ...META, billed_units: { search_units: Math.max(1, Math.ceil(docs.length / 100)) } } });
}

export const FAKE_COHERE_MODELS = ['command-a-03-2025', 'embed-v4.0', 'rerank-v3.5'];

/** GET /v1/models: Cohere's list (`page_size` up to 1000). */
async function modelList(ex: Exchange): Promise<void> {
  if (!(await ex.begin(undefined, false))) return;
  ex.json(200, { models: FAKE_COHERE_MODELS.map((name) => ({ name, endpoints: ['chat'], context_length: 256000 })), next_page_token: null });
}
