/**
 * Fake OpenAI-compatible server. Routes match on the path suffix so the
 * same fake serves `/v1/...`, Groq-style `/openai/v1/...`, bare `/chat/completions` and
 * Azure `/openai/deployments/{deployment}/...` (the deployment stands in for the model).
 *
 * - POST …/chat/completions        JSON or SSE (`data:` chunks, `data: [DONE]`), tools, usage
 * - POST …/embeddings              deterministic vectors (float or base64), usage
 * - POST …/audio/speech            chunked binary audio (or `stream_format: "sse"`)
 * - POST …/audio/transcriptions    multipart; `{text}` (also …/audio/translations)
 * - GET  …/models                  model list
 * - POST …/responses/input_tokens  `{object: "response.input_tokens", input_tokens}`: the
 *                                  word count of `instructions` and every input text
 * - anything else                  echo `{method, path, query, headers, body}` (no auth)
 * Auth: `Authorization: Bearer <key>` or Azure `api-key`; 401 when missing (or not `apiKey`).
 * Under `/<provider slug>/…` the fake also refuses, with that provider's own error, the chat
 * fields the provider documents as rejected (./provider-rules.ts). Under `/azure-ai/…` it is
 * the Azure AI model inference API: `api-version` is required, and a body field outside the
 * API's common set is refused unless `extra-parameters` is `pass-through` or `drop`.
 */
import { answer, embed, embedBase64, partsText, promptTokens, wordCount, type Conversation, type Turn } from './answer';
import { arr, bearer, obj, startFake, str, type ErrorShaper, type Exchange, type FakeOptions, type FakeServer, type Frame } from './behaviour';
import { refusedByProvider } from './provider-rules';
import { SSE_CONTENT_TYPE, SSE_DONE, sseData } from './sse';

export const openaiError: ErrorShaper = (status, message, type) => {
  const [t, code] =
    status === 401
      ? ['invalid_request_error', 'invalid_api_key']
      : status === 404
        ? ['invalid_request_error', 'model_not_found']
        : status === 429
          ? ['requests', 'rate_limit_exceeded']
          : status >= 500
            ? ['server_error', null]
            : ['invalid_request_error', null];
  return { body: { error: { message, type: type ?? t, param: null, code } } };
};

export const FAKE_OPENAI_MODELS = ['gpt-4o-mini', 'fake-tools', 'text-embedding-3-small', 'tts-1', 'whisper-1'];

export function startOpenAIFake(options: FakeOptions = {}): Promise<FakeServer> {
  return startFake('openai', options, openaiError, handle);
}

async function handle(ex: Exchange): Promise<void> {
  const { rec } = ex;
  const deployment = /\/openai\/deployments\/([^/]+)\//.exec(rec.path)?.[1];
  if (deployment) rec.params.deployment = decodeURIComponent(deployment);
  const route = (suffix: string, method = 'POST') => rec.method === method && rec.path.endsWith(suffix);
  const api = route('/chat/completions')
    ? chat
    : route('/embeddings')
      ? embeddings
      : route('/audio/speech')
        ? speech
        : route('/audio/transcriptions') || route('/audio/translations')
          ? transcription
          : route('/models', 'GET')
            ? models
            : route('/responses/input_tokens')
              ? inputTokens
              : undefined;
  if (!api) {
    if (!(await ex.begin(undefined, false))) return;
    return echo(ex);
  }
  if (rec.path.startsWith('/azure-ai/') && api !== models) {
    const refused = azureInferenceRefusal(rec);
    if (refused) {
      if (!(await ex.begin(undefined, false))) return;
      return ex.json(400, refused);
    }
  }
  const key = bearer(rec) ?? rec.headers['api-key'];
  if (!key && !ex.keyless)
    return ex.error(
      401,
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
    );
  if (ex.apiKey !== undefined && key !== ex.apiKey) return ex.error(401, `Incorrect API key provided: ${(key ?? '').slice(0, 6)}***.`);
  return api(ex, deployment ? decodeURIComponent(deployment) : undefined);
}

function headersFor(ex: Exchange): Record<string, string> {
  return {
    'x-request-id': `req_fake_${ex.rec.seq}`,
    'openai-processing-ms': '1',
    'x-ratelimit-limit-requests': '10000',
    'x-ratelimit-remaining-requests': '9999',
    'x-ratelimit-reset-requests': '6ms',
  };
}

/** OpenAI chat request -> the fakes' conversation. */
export function openaiConversation(body: Record<string, unknown>, model: string): Conversation {
  const turns: Turn[] = arr(body.messages).map((m) => {
    const msg = obj(m);
    const role = str(msg.role) ?? 'user';
    const calls = arr(msg.tool_calls).map((c) => `${str(obj(obj(c).function).name)}(${str(obj(obj(c).function).arguments) ?? ''})`);
    const text = [partsText(msg.content), ...calls].filter(Boolean).join(' ');
    return { role: role === 'developer' ? 'system' : (role as Turn['role']), text };
  });
  const choice = body.tool_choice;
  const tools = choice === 'none' ? [] : arr(body.tools).map((t) => str(obj(obj(t).function).name) ?? '');
  const forceTool = choice === 'required' ? '' : str(obj(obj(choice).function).name);
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  const format = obj(body.response_format);
  const jsonSchema =
    format.type === 'json_schema' ? (obj(format.json_schema).schema ?? { type: 'object' }) : format.type === 'json_object' ? { type: 'object' } : undefined;
  return { model, turns, tools, forceTool, maxTokens: typeof maxTokens === 'number' ? maxTokens : undefined, jsonSchema };
}

async function chat(ex: Exchange, deployment?: string): Promise<void> {
  const body = obj(ex.rec.body);
  const model = str(body.model) ?? deployment;
  const stream = body.stream === true;
  if (!(await ex.begin(model, stream))) return;
  if (!model) return ex.error(400, 'you must provide a model parameter');
  if (!Array.isArray(body.messages) || body.messages.length === 0) return ex.error(400, "Missing required parameter: 'messages'.");
  const refused = refusedByProvider(ex.rec.path.split('/')[1] ?? '', body);
  if (refused) return ex.json(refused.status, refused.body);

  const conv = openaiConversation(body, model);
  const a = answer(conv);
  // OpenAI counts cached prompt tokens inside prompt_tokens.
  const cached = ex.knobs.promptCache?.read ?? 0;
  const prompt = promptTokens(conv) + cached;
  const usage = {
    prompt_tokens: prompt,
    completion_tokens: a.completionTokens,
    total_tokens: prompt + a.completionTokens,
    prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
  const id = `chatcmpl-fake${ex.rec.seq}`;
  const created = Math.floor(Date.now() / 1000);
  const toolCall = a.kind === 'tool' ? { id: `call_${a.idSuffix}`, type: 'function' as const } : undefined;

  if (!stream) {
    const message =
      a.kind === 'text'
        ? { role: 'assistant', content: a.text, refusal: null, annotations: [] }
        : {
            role: 'assistant',
            content: null,
            refusal: null,
            annotations: [],
            tool_calls: [{ ...toolCall, function: { name: a.name, arguments: a.argsJson } }],
          };
    const finish = a.kind === 'text' ? a.finish : 'tool_calls';
    return ex.json(
      200,
      {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
        usage,
        service_tier: 'default',
        system_fingerprint: 'fp_fake',
      },
      headersFor(ex),
    );
  }

  const includeUsage = obj(body.stream_options).include_usage === true;
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    sseData({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      system_fingerprint: 'fp_fake',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(includeUsage ? { usage: null } : {}),
    });
  const frames: Frame[] = [];
  if (a.kind === 'text') {
    frames.push(chunk({ role: 'assistant', content: '', refusal: null }, null));
    for (const p of a.pieces) frames.push(chunk({ content: p }, null));
    frames.push(chunk({}, a.finish));
  } else {
    frames.push(
      chunk({ role: 'assistant', content: null, refusal: null, tool_calls: [{ index: 0, ...toolCall, function: { name: a.name, arguments: '' } }] }, null),
    );
    for (const f of a.fragments) frames.push(chunk({ tool_calls: [{ index: 0, function: { arguments: f } }] }, null));
    frames.push(chunk({}, 'tool_calls'));
  }
  if (includeUsage) {
    frames.push(sseData({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: 'fp_fake', choices: [], usage }));
  }
  frames.push(SSE_DONE);
  await ex.stream(SSE_CONTENT_TYPE, frames, {
    headers: headersFor(ex),
    errorFrame: (type, message) => sseData({ error: { message, type: type ?? 'server_error', param: null, code: null } }),
  });
}

async function embeddings(ex: Exchange, deployment?: string): Promise<void> {
  const body = obj(ex.rec.body);
  const model = str(body.model) ?? deployment;
  if (!(await ex.begin(model, false))) return;
  if (!model) return ex.error(400, 'you must provide a model parameter');
  const input = body.input;
  if (input === undefined || input === null || (Array.isArray(input) && input.length === 0)) {
    return ex.error(400, "'input' is a required property");
  }
  // A string, an array of strings, one token array or an array of token arrays.
  const items: Array<string | number[]> =
    typeof input === 'string'
      ? [input]
      : Array.isArray(input) && input.every((v) => typeof v === 'number')
        ? [input as number[]]
        : (input as Array<string | number[]>);
  const dims = typeof body.dimensions === 'number' ? body.dimensions : 8;
  const base64 = body.encoding_format === 'base64';
  let tokens = 0;
  const data = items.map((item, index) => {
    const text = typeof item === 'string' ? item : item.join(' ');
    tokens += typeof item === 'string' ? wordCount(item) : item.length;
    const v = embed(text, dims);
    return { object: 'embedding', index, embedding: base64 ? embedBase64(v) : v };
  });
  ex.json(200, { object: 'list', data, model, usage: { prompt_tokens: tokens, total_tokens: tokens } }, headersFor(ex));
}

const AUDIO_TYPES: Record<string, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/ogg',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

/** The exact bytes the fake answers /audio/speech with (at least 3 KiB, 1 KiB per stream frame). */
export function fakeSpeechBytes(input: string, voice: string, format = 'mp3'): Buffer {
  const head = Buffer.from(`FAKEAUDIO ${format} ${voice}\n${input}\n`);
  const size = Math.max(3072, Math.ceil(head.length / 1024) * 1024);
  const out = Buffer.alloc(size);
  head.copy(out);
  for (let i = head.length; i < size; i++) out[i] = (i * 31) % 256;
  return out;
}

async function speech(ex: Exchange, deployment?: string): Promise<void> {
  const body = obj(ex.rec.body);
  const model = str(body.model) ?? deployment;
  if (!(await ex.begin(model, true))) return;
  const input = str(body.input);
  const voice = str(body.voice) ?? str(obj(body.voice).id);
  if (!model) return ex.error(400, 'you must provide a model parameter');
  if (input === undefined) return ex.error(400, "Missing required parameter: 'input'.");
  if (voice === undefined) return ex.error(400, "Missing required parameter: 'voice'.");
  const format = str(body.response_format) ?? 'mp3';
  const bytes = fakeSpeechBytes(input, voice, format);
  const frames: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += 1024) frames.push(bytes.subarray(i, i + 1024));
  if (body.stream_format === 'sse') {
    const sse: Frame[] = frames.map((f) => sseData({ type: 'speech.audio.delta', audio: f.toString('base64') }));
    const inTok = wordCount(input);
    sse.push(sseData({ type: 'speech.audio.done', usage: { input_tokens: inTok, output_tokens: frames.length, total_tokens: inTok + frames.length } }));
    return ex.stream(SSE_CONTENT_TYPE, sse, { headers: headersFor(ex) });
  }
  await ex.stream(AUDIO_TYPES[format] ?? 'application/octet-stream', frames, { headers: headersFor(ex) });
}

async function transcription(ex: Exchange, deployment?: string): Promise<void> {
  const form = ex.rec.form;
  const model = form?.fields.model ?? deployment;
  const streaming = form?.fields.stream === 'true';
  if (!(await ex.begin(model, streaming))) return;
  if (!form) return ex.error(400, 'Expected a multipart/form-data body.');
  const file = form.files.find((f) => f.name === 'file');
  if (!file) return ex.error(400, "Missing required parameter: 'file'.");
  if (!model) return ex.error(400, "Missing required parameter: 'model'.");
  const translate = ex.rec.path.endsWith('/translations');
  const content = file.data.toString('utf8');
  const printable = !/[\u0000-\u0008\u000e-\u001f\ufffd]/.test(content);
  const text = `${translate ? 'translation' : 'transcript'}: ${printable ? content.trim() : `${file.data.length} bytes`}`;
  const seconds = Math.max(1, Math.ceil(file.data.length / 16000));
  const format = form.fields.response_format ?? 'json';
  const h = headersFor(ex);
  if (streaming) {
    const frames: Frame[] = text.split(/(?<= )/).map((delta) => sseData({ type: 'transcript.text.delta', delta }));
    frames.push(sseData({ type: 'transcript.text.done', text, usage: { type: 'duration', seconds } }));
    return ex.stream(SSE_CONTENT_TYPE, frames, { headers: h });
  }
  const plain = (type: string, body: string) => {
    ex.res.writeHead(200, { 'content-type': type, 'content-length': String(Buffer.byteLength(body)), ...h });
    ex.res.end(body);
  };
  switch (format) {
    case 'text':
      return plain('text/plain; charset=utf-8', `${text}\n`);
    case 'srt':
      return plain('text/plain; charset=utf-8', `1\n00:00:00,000 --> 00:00:0${Math.min(seconds, 9)},000\n${text}\n\n`);
    case 'vtt':
      return plain('text/plain; charset=utf-8', `WEBVTT\n\n00:00:00.000 --> 00:00:0${Math.min(seconds, 9)}.000\n${text}\n\n`);
    case 'verbose_json':
      return ex.json(
        200,
        {
          task: translate ? 'translate' : 'transcribe',
          language: form.fields.language ?? 'english',
          duration: seconds,
          text,
          segments: [{ id: 0, seek: 0, start: 0, end: seconds, text, tokens: [], temperature: 0, avg_logprob: -0.1, compression_ratio: 1, no_speech_prob: 0 }],
          usage: { type: 'duration', seconds },
        },
        h,
      );
    default:
      return ex.json(200, { text, usage: { type: 'duration', seconds } }, h);
  }
}

/** Responses input -> word count of its texts (instructions, string input, message texts, call outputs). */
async function inputTokens(ex: Exchange): Promise<void> {
  const body = obj(ex.rec.body);
  if (!(await ex.begin(str(body.model), false))) return;
  const texts: string[] = [str(body.instructions) ?? ''];
  if (typeof body.input === 'string') texts.push(body.input);
  for (const item of arr(body.input)) {
    const it = obj(item);
    texts.push(partsText(it.content), str(it.output) ?? '', str(it.arguments) ?? '');
  }
  ex.json(200, { object: 'response.input_tokens', input_tokens: texts.reduce((n, t) => n + wordCount(t), 0) }, headersFor(ex));
}

async function models(ex: Exchange): Promise<void> {
  if (!(await ex.begin(undefined, false))) return;
  ex.json(200, {
    object: 'list',
    data: FAKE_OPENAI_MODELS.map((id) => ({ id, object: 'model', created: 1700000000, owned_by: 'fake' })),
  });
}

function echo(ex: Exchange): void {
  const { rec } = ex;
  let body: unknown = rec.body;
  if (body === undefined && rec.form) {
    body = {
      fields: rec.form.fields,
      files: rec.form.files.map((f) => ({ name: f.name, filename: f.filename, contentType: f.contentType, size: f.data.length })),
    };
  }
  if (body === undefined) body = rec.rawBody.length ? rec.rawBody.toString('utf8') : null;
  ex.json(200, { method: rec.method, path: rec.path, query: rec.query, headers: rec.headers, body });
}

/** The common parameters of the Azure AI model inference API (chat and embeddings). */
const AZURE_INFERENCE_FIELDS = new Set([
  'messages',
  'model',
  'frequency_penalty',
  'presence_penalty',
  'temperature',
  'top_p',
  'max_tokens',
  'response_format',
  'stop',
  'stream',
  'tools',
  'tool_choice',
  'seed',
  'modalities',
  'input',
  'dimensions',
  'encoding_format',
  'input_type',
]);

function azureInferenceRefusal(rec: Exchange['rec']): unknown {
  if (!rec.query['api-version']) {
    return { error: { code: 'MissingApiVersionParameter', message: 'The api-version query parameter (?api-version=) is required for all requests.' } };
  }
  const mode = rec.headers['extra-parameters'] ?? 'error';
  const extra = Object.keys(obj(rec.body)).filter((k) => !AZURE_INFERENCE_FIELDS.has(k));
  if (mode === 'error' && extra.length) {
    return {
      error: {
        code: 'Invalid input',
        status: 422,
        message: `Extra parameters ${JSON.stringify(extra)} are not allowed when extra-parameters is not set or set to be 'error'. Set extra-parameters to 'pass-through' to pass to the model.`,
      },
    };
  }
  return undefined;
}
