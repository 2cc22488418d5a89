/**
 * Fake Gemini (Developer API) and Vertex AI Gemini server.
 *
 * Paths (both forms, any of v1 / v1beta / v1beta1):
 * - Developer: /v1beta/models/{model}:{method}             auth `x-goog-api-key` or `?key=`
 * - Vertex:    /v1/projects/{p}/locations/{r}/publishers/google/models/{model}:{method}
 *                                                          auth `Authorization: Bearer`
 * - Express:   /v1/publishers/google/models/{model}:{method}  auth `x-goog-api-key`
 * Methods: generateContent, streamGenerateContent (`?alt=sse`: `data:` events of full
 * GenerateContentResponse objects, `\r\n\r\n`-separated on both APIs; without alt=sse a
 * streamed JSON array), countTokens, embedContent, batchEmbedContents, predict (Vertex
 * text embeddings). Function calls come as `functionCall` parts (no id). As the real API,
 * a candidate's `index` is left out when it is 0 (proto3 JSON omits default values).
 */
import { answer, embed, partsText, promptTokens, wordCount, type Conversation, type Turn } from './answer';
import { arr, bearer, obj, startFake, str, type ErrorShaper, type Exchange, type FakeOptions, type FakeServer, type Frame } from './behaviour';
import { SSE_CONTENT_TYPE, sseData } from './sse';

const STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

export const googleError: ErrorShaper = (status, message, type) => ({
  body: { error: { code: status, message, status: type ?? STATUS[status] ?? (status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION') } },
});

export function startGeminiFake(options: FakeOptions = {}): Promise<FakeServer> {
  return startFake('gemini', options, googleError, handle);
}

const PATH = /^\/(v1|v1beta|v1beta1|v1alpha)\/(?:projects\/([^/]+)\/locations\/([^/]+)\/)?(publishers\/google\/)?models\/([^/:]+):(\w+)$/;

async function handle(ex: Exchange): Promise<void> {
  const { rec } = ex;
  if (rec.method === 'GET' && /^\/v1(beta)?\/models$/.test(rec.path)) return modelList(ex);
  const m = PATH.exec(rec.path);
  if (rec.method !== 'POST' || !m) {
    if (!(await ex.begin(undefined, false))) return;
    return ex.error(404, `Not found: ${rec.method} ${rec.path}`);
  }
  const [, version, project, region, publishers, rawModel, method] = m;
  const model = decodeURIComponent(rawModel!);
  const vertex = publishers !== undefined;
  Object.assign(rec.params, { version: version!, model, method: method!, api: vertex ? 'vertex' : 'developer' });
  if (project) Object.assign(rec.params, { project, region: region! });

  const apiKey = rec.headers['x-goog-api-key'] ?? rec.query.key;
  if (project) {
    const token = bearer(rec);
    if (!token || (ex.apiKey !== undefined && token !== ex.apiKey)) {
      return ex.error(
        401,
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
      );
    }
  } else if (!apiKey) {
    return ex.error(
      403,
      "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
    );
  } else if (ex.apiKey !== undefined && apiKey !== ex.apiKey) {
    const body = obj(googleError(400, 'API key not valid. Please pass a valid API key.').body);
    Object.assign(obj(body.error), { details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' }] });
    return ex.json(400, body);
  }

  const streaming = method === 'streamGenerateContent';
  if (!(await ex.begin(model, streaming))) return;
  const body = obj(rec.body);
  switch (method) {
    case 'generateContent':
    case 'streamGenerateContent':
      return generate(ex, body, model, vertex, streaming);
    case 'countTokens':
      return ex.json(200, { totalTokens: promptTokens(geminiConversation(obj(body.generateContentRequest ?? body), model)) });
    case 'embedContent': {
      const text = partsText(arr(obj(body.content).parts));
      return ex.json(200, { embedding: { values: embed(text, dims(body.outputDimensionality)) } });
    }
    case 'batchEmbedContents': {
      const requests = arr(body.requests).map(obj);
      if (requests.length === 0) return ex.error(400, '* BatchEmbedContentsRequest.requests: requests is not specified');
      const embeddings = requests.map((r) => ({ values: embed(partsText(arr(obj(r.content).parts)), dims(r.outputDimensionality)) }));
      return ex.json(200, { embeddings });
    }
    case 'predict': {
      const size = dims(obj(body.parameters).outputDimensionality);
      const predictions = arr(body.instances).map((i) => {
        const content = str(obj(i).content) ?? '';
        return { embeddings: { values: embed(content, size), statistics: { token_count: wordCount(content), truncated: false } } };
      });
      const chars = arr(body.instances).reduce<number>((n, i) => n + (str(obj(i).content)?.length ?? 0), 0);
      return ex.json(200, { predictions, metadata: { billableCharacterCount: chars } });
    }
    default:
      return ex.error(404, `Method not found: ${method}`);
  }
}

function dims(v: unknown): number {
  return typeof v === 'number' ? v : 8;
}

function responseText(response: unknown): string {
  const r = obj(response);
  for (const k of ['content', 'output', 'result']) if (typeof r[k] === 'string') return r[k] as string;
  return JSON.stringify(response);
}

/** Gemini request -> the fakes' conversation (functionResponse parts become tool turns). */
export function geminiConversation(body: Record<string, unknown>, model: string): Conversation {
  const turns: Turn[] = [];
  const system = arr(obj(body.systemInstruction).parts);
  if (system.length) turns.push({ role: 'system', text: partsText(system) });
  for (const c of arr(body.contents)) {
    const content = obj(c);
    const role = content.role === 'model' ? 'assistant' : 'user';
    for (const p of arr(content.parts)) {
      const part = obj(p);
      if (part.functionResponse !== undefined) turns.push({ role: 'tool', text: responseText(obj(part.functionResponse).response) });
      else if (part.functionCall !== undefined) {
        const call = obj(part.functionCall);
        turns.push({ role: 'assistant', text: `${str(call.name)}(${JSON.stringify(call.args)})` });
      } else if (typeof part.text === 'string' && part.thought !== true) turns.push({ role, text: part.text });
    }
  }
  const cfg = obj(obj(body.toolConfig).functionCallingConfig);
  const tools = cfg.mode === 'NONE' ? [] : arr(body.tools).flatMap((t) => arr(obj(t).functionDeclarations).map((d) => str(obj(d).name) ?? ''));
  const forceTool = cfg.mode === 'ANY' ? (str(arr(cfg.allowedFunctionNames)[0]) ?? '') : undefined;
  const generation = obj(body.generationConfig);
  const max = generation.maxOutputTokens;
  const jsonSchema = generation.responseMimeType === 'application/json' ? (generation.responseSchema ?? { type: 'OBJECT' }) : undefined;
  return { model, turns, tools, forceTool, maxTokens: typeof max === 'number' ? max : undefined, jsonSchema };
}

async function generate(ex: Exchange, body: Record<string, unknown>, model: string, vertex: boolean, streaming: boolean): Promise<void> {
  const contents = arr(body.contents);
  if (contents.length === 0) return ex.error(400, '* GenerateContentRequest.contents: contents is not specified');
  if (vertex && contents.some((c) => obj(c).role === undefined)) {
    return ex.error(400, 'Please use a valid role: user, model.');
  }
  const conv = geminiConversation(body, model);
  const a = answer(conv);
  // Gemini counts cached content inside promptTokenCount.
  const cached = ex.knobs.promptCache?.read ?? 0;
  const prompt = promptTokens(conv) + cached;
  const base = {
    modelVersion: model,
    responseId: `fake-resp-${ex.rec.seq}`,
    ...(vertex ? { createTime: new Date().toISOString() } : {}),
  };
  const usage = {
    promptTokenCount: prompt,
    candidatesTokenCount: a.completionTokens,
    totalTokenCount: prompt + a.completionTokens,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
    ...(cached ? { cachedContentTokenCount: cached } : {}),
  };
  const finishReason = a.kind === 'text' && a.finish === 'length' ? 'MAX_TOKENS' : 'STOP';
  const candidate = (parts: unknown[], finish?: string) => ({
    content: { role: 'model', parts },
    ...(finish ? { finishReason: finish } : {}),
  });

  if (!streaming) {
    const parts = a.kind === 'text' ? [{ text: a.text }] : [{ functionCall: { name: a.name, args: a.args } }];
    return ex.json(200, { candidates: [candidate(parts, finishReason)], usageMetadata: usage, ...base });
  }

  const chunks: unknown[] = [];
  if (a.kind === 'tool') {
    chunks.push({ candidates: [candidate([{ functionCall: { name: a.name, args: a.args } }], finishReason)], usageMetadata: usage, ...base });
  } else {
    const pieces = a.pieces.length ? a.pieces : [''];
    pieces.forEach((p, i) => {
      const last = i === pieces.length - 1;
      chunks.push({
        candidates: [candidate([{ text: p }], last ? finishReason : undefined)],
        usageMetadata: last ? usage : { promptTokenCount: prompt, totalTokenCount: prompt, promptTokensDetails: usage.promptTokensDetails },
        ...base,
      });
    });
  }
  const errorBody = (type: string | undefined, message: string) => ({ error: { code: 500, message, status: type ?? 'INTERNAL' } });
  if (ex.rec.query.alt === 'sse') {
    const sep = '\r\n\r\n';
    return ex.stream(
      SSE_CONTENT_TYPE,
      chunks.map((c) => sseData(c, sep)),
      {
        errorFrame: (type, message) => sseData(errorBody(type, message), sep),
      },
    );
  }
  // Without alt=sse: one JSON array, streamed element by element.
  const frames: Frame[] = chunks.map((c, i) => `${i === 0 ? '[' : '\r\n,'}${JSON.stringify(c)}`);
  frames.push(']');
  return ex.stream('application/json; charset=UTF-8', frames, {
    errorFrame: (type, message) => `\r\n,${JSON.stringify(errorBody(type, message))}]`,
  });
}

export const FAKE_GEMINI_MODELS = ['gemini-2.5-flash', 'gemini-2.5-pro', 'text-embedding-004'];

/** GET /v1beta/models: `models/<id>` resource names, paged by `pageSize` (max 1000). */
async function modelList(ex: Exchange): Promise<void> {
  const { rec } = ex;
  const apiKey = rec.headers['x-goog-api-key'] ?? rec.query.key;
  if (!apiKey)
    return ex.error(
      403,
      "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
    );
  if (ex.apiKey !== undefined && apiKey !== ex.apiKey) return ex.error(400, 'API key not valid. Please pass a valid API key.');
  if (!(await ex.begin(undefined, false))) return;
  ex.json(200, {
    models: FAKE_GEMINI_MODELS.map((id) => ({
      name: `models/${id}`,
      displayName: id,
      supportedGenerationMethods: id.startsWith('text-embedding') ? ['embedContent'] : ['generateContent', 'countTokens'],
    })),
  });
}
