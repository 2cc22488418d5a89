/**
 * Fake Replicate predictions API for language models, speaking the real wire format:
 *
 * - POST /v1/models/{owner}/{name}/predictions   an official model
 * - POST /v1/predictions                          a model version (`version` in the body)
 *   Body `{input, stream?, webhook?, webhook_events_filter?}`; the input follows a chat
 *   model's schema: `prompt` (required string), `system_prompt`, `max_tokens`, `temperature`,
 *   `top_p`, `seed`, `stop_sequences` (ONE comma-separated string, as Replicate's language
 *   models take it). With `Prefer: wait` the answer is the finished prediction (`status:
 *   "succeeded"`, `output` an array of strings, `metrics` with token counts); without, a
 *   `starting` prediction whose `urls.stream` is served below.
 * - GET /v1/stream/{id}                            SSE: `event: output` (text), `event: done`;
 *   needs `Accept: text/event-stream` and the token, as Replicate's streaming guide shows
 * Auth: `Authorization: Bearer <token>`; errors are problem+json `{title, detail, status}`.
 */
import { answer, promptTokens, type Conversation, type Turn } from './answer';
import { bearer, obj, startFake, str, type ErrorShaper, type Exchange, type FakeOptions, type FakeServer, type Frame } from './behaviour';
import { SSE_CONTENT_TYPE } from './sse';

export const replicateError: ErrorShaper = (status, message) => ({
  body: { title: status === 401 ? 'Unauthenticated' : status === 422 ? 'Input validation failed' : 'Error', detail: message, status },
  headers: { 'content-type': 'application/problem+json' },
});

const BODY_FIELDS = new Set(['input', 'stream', 'webhook', 'webhook_events_filter', 'version']);

export function startReplicateFake(options: FakeOptions = {}): Promise<FakeServer> {
  const streams = new Map<string, string[]>();
  let next = 0;

  async function handle(ex: Exchange): Promise<void> {
    const { rec } = ex;
    const stream = /^\/v1\/stream\/([^/]+)$/.exec(rec.path);
    if (rec.method === 'GET' && stream) {
      const key = bearer(rec);
      if (!key || (options.apiKey !== undefined && key !== options.apiKey)) return ex.error(401, 'You did not pass a valid authentication token');
      if (!(rec.headers.accept ?? '').includes('text/event-stream')) return ex.error(406, 'Streams are served as text/event-stream.');
      return serveStream(ex, streams.get(stream[1]!));
    }
    const official = /^\/v1\/models\/([^/]+)\/([^/]+)\/predictions$/.exec(rec.path);
    const versioned = rec.path === '/v1/predictions';
    if (rec.method !== 'POST' || (!official && !versioned)) return ex.error(404, 'Not found.');
    const body = obj(rec.body);
    const model = official ? `${official[1]}/${official[2]}` : str(body.version);
    if (!(await ex.begin(model, false))) return;
    const key = bearer(rec);
    if (!key || (options.apiKey !== undefined && key !== options.apiKey)) return ex.error(401, 'You did not pass a valid authentication token');
    const unknown = Object.keys(body).filter((k) => !BODY_FIELDS.has(k) || (official && k === 'version'));
    if (unknown.length) return ex.error(422, `- (root): Additional property ${unknown[0]} is not allowed`);
    if (versioned && !/^[a-f0-9]{64}$/.test(str(body.version) ?? '')) return ex.error(422, '- version: Invalid version. Expected a 64-character version id');
    const input = obj(body.input);
    const invalid = validate(input);
    if (invalid) return ex.error(422, invalid);

    const conv = conversationOf(input, model ?? 'unknown');
    const a = answer(conv);
    const pieces = a.kind === 'text' ? a.pieces : [a.argsJson];
    const id = `fake${++next}prediction`;
    const origin = `http://${rec.headers.host}`;
    const urls = {
      get: `${origin}/v1/predictions/${id}`,
      cancel: `${origin}/v1/predictions/${id}/cancel`,
      stream: `${origin}/v1/stream/${id}`,
      web: `https://replicate.com/p/${id}`,
    };
    const head = { id, model: model ?? '', version: versioned ? body.version : 'hidden', input, logs: '', urls, created_at: new Date().toISOString() };
    const wait = /\bwait\b/.test(rec.headers.prefer ?? '');
    if (wait) {
      const prompt = promptTokens(conv);
      return ex.json(201, {
        ...head,
        status: 'succeeded',
        output: pieces,
        error: null,
        metrics: { input_token_count: prompt, output_token_count: a.completionTokens, predict_time: 0.01 },
        completed_at: new Date().toISOString(),
      });
    }
    streams.set(id, pieces);
    ex.json(201, { ...head, status: 'starting', output: null, error: null });
  }

  return startFake('replicate', options, replicateError, handle);
}

function validate(input: Record<string, unknown>): string | undefined {
  if (typeof input.prompt !== 'string') return '- input: prompt is required';
  for (const f of ['system_prompt', 'stop_sequences'])
    if (input[f] !== undefined && typeof input[f] !== 'string') return `- input.${f}: Invalid type. Expected: string`;
  for (const f of ['max_tokens', 'seed']) if (input[f] !== undefined && !Number.isInteger(input[f])) return `- input.${f}: Invalid type. Expected: integer`;
  for (const f of ['temperature', 'top_p']) if (input[f] !== undefined && typeof input[f] !== 'number') return `- input.${f}: Invalid type. Expected: number`;
  return undefined;
}

function conversationOf(input: Record<string, unknown>, model: string): Conversation {
  const turns: Turn[] = [];
  if (typeof input.system_prompt === 'string') turns.push({ role: 'system', text: input.system_prompt });
  turns.push({ role: 'user', text: String(input.prompt) });
  return { model, turns, tools: [], maxTokens: typeof input.max_tokens === 'number' ? input.max_tokens : undefined };
}

async function serveStream(ex: Exchange, pieces: string[] | undefined): Promise<void> {
  if (!pieces) return ex.error(404, 'Prediction stream not found.');
  if (!(await ex.begin(undefined, true))) return;
  const frames: Frame[] = pieces.map((p, i) => `event: output\nid: ${i + 1}\ndata: ${p}\n\n`);
  frames.push('event: done\ndata: {}\n\n');
  await ex.stream(SSE_CONTENT_TYPE, frames, { errorFrame: (_t, message) => `event: error\ndata: ${JSON.stringify({ detail: message })}\n\n` });
}
