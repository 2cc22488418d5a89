/**
 * Fake rerank APIs for the providers that have no other fake here:
 *
 * - Jina      POST /v1/rerank        Bearer; `top_n`, `return_documents` (default true);
 *                                    `{model, usage:{total_tokens, prompt_tokens}, results:[{index, relevance_score, document?:{text}}]}`;
 *                                    errors `{detail}` (FastAPI style, 422 for validation)
 * - Voyage    POST /v1/rerank        Bearer; string documents only, `top_k`, `return_documents`
 *                                    (default false), `truncation`; `{object:"list", data:[{index, relevance_score, document?: string}], model, usage:{total_tokens}}`;
 *                                    errors `{detail}`
 * - Pinecone  POST /rerank           `Api-Key` header (+ `X-Pinecone-API-Version`); object documents only,
 *                                    `rank_fields` (default ["text"]), `top_n`, `return_documents` (default true),
 *                                    `parameters.truncate` END|NONE; `{model, data:[{index, score, document?}], usage:{rerank_units}}`;
 *                                    errors `{error:{code, message}, status}`
 * - Azure AI  POST /providers/cohere/v2/rerank, /v2/rerank, /v1/rerank   Cohere v2 body and answer
 *                                    (`{id, results, meta:{billed_units:{search_units}}}`); `Authorization: Bearer`
 *                                    or `api-key`; a `cohere.`-prefixed model is an unknown deployment (404);
 *                                    errors `{error:{code, message}}`
 *
 * Every fake answers 400/422 for a field its real API does not document, so a gateway that
 * forwards fields blindly is caught. Ranking is the fakes' shared `rank` (answer.ts); the
 * shared knobs of behaviour.ts apply (model `fail-503`, `x-fake-status`, latency, …).
 */
import { rank, wordCount } from './answer';
import { arr, bearer, obj, startFake, str, type ErrorShaper, type Exchange, type FakeOptions, type FakeServer } from './behaviour';

export const jinaError: ErrorShaper = (_status, message) => ({ body: { detail: message } });
export const voyageError: ErrorShaper = (_status, message) => ({ body: { detail: message } });

const PINECONE_CODES: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'UNKNOWN',
  503: 'UNAVAILABLE',
};
export const pineconeError: ErrorShaper = (status, message, type) => ({
  body: { error: { code: type ?? PINECONE_CODES[status] ?? (status >= 500 ? 'UNKNOWN' : 'INVALID_ARGUMENT'), message }, status },
});

export const azureAIError: ErrorShaper = (status, message, type) => ({
  body: {
    error: {
      code: type ?? (status === 401 ? 'Unauthorized' : status === 404 ? 'DeploymentNotFound' : status === 429 ? 'TooManyRequests' : String(status)),
      message,
    },
  },
});

type Route = (ex: Exchange) => Promise<void>;

/** Dispatch on method + path, with the provider's 404 for anything else. */
async function serve(ex: Exchange, routes: Record<string, Route>, authorised: (ex: Exchange) => boolean, unauthorised: string): Promise<void> {
  const route = ex.rec.method === 'POST' ? routes[ex.rec.path] : undefined;
  if (!route) {
    if (!(await ex.begin(undefined, false))) return;
    return ex.error(404, `Not found: ${ex.rec.method} ${ex.rec.path}`);
  }
  if (!authorised(ex)) return ex.error(401, unauthorised);
  return route(ex);
}

const bearerOk = (ex: Exchange) => {
  const token = bearer(ex.rec);
  return !!token && (ex.apiKey === undefined || token === ex.apiKey);
};

function unknownFields(body: Record<string, unknown>, allowed: readonly string[]): string[] {
  return Object.keys(body).filter((k) => !allowed.includes(k));
}

const positiveInt = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 1;

// ---- Jina ---------------------------------------------------------------------------------

const JINA_FIELDS = ['model', 'query', 'documents', 'top_n', 'return_documents'] as const;

export function startJinaFake(options: FakeOptions = {}): Promise<FakeServer> {
  return startFake('jina', options, jinaError, (ex) => serve(ex, { '/v1/rerank': jinaRerank }, bearerOk, 'Unauthorized: invalid API key'));
}

async function jinaRerank(ex: Exchange): Promise<void> {
  const body = obj(ex.rec.body);
  const model = str(body.model);
  if (!(await ex.begin(model, false))) return;
  const extra = unknownFields(body, JINA_FIELDS);
  if (extra.length) return ex.error(422, `Extra inputs are not permitted: ${extra.join(', ')}`);
  const query = str(body.query);
  const docs = arr(body.documents).map((d) => (typeof d === 'string' ? d : str(obj(d).text)));
  if (!model || query === undefined) return ex.error(422, 'Field required: model, query');
  if (!docs.length || docs.some((d) => d === undefined)) return ex.error(422, 'documents must be a non-empty list of strings or {text} objects');
  if (body.top_n !== undefined && !positiveInt(body.top_n)) return ex.error(422, 'top_n must be a positive integer');
  const texts = docs as string[];
  const withDocs = body.return_documents !== false;
  const results = rank(query, texts, body.top_n as number | undefined).map((r) => ({
    index: r.index,
    relevance_score: r.score,
    ...(withDocs ? { document: { text: texts[r.index] } } : {}),
  }));
  const tokens = texts.reduce((n, d) => n + wordCount(d) + wordCount(query), 0);
  ex.json(200, { model, usage: { total_tokens: tokens, prompt_tokens: tokens }, results });
}

// ---- Voyage -------------------------------------------------------------------------------

const VOYAGE_FIELDS = ['query', 'documents', 'model', 'top_k', 'return_documents', 'truncation'] as const;

export function startVoyageFake(options: FakeOptions = {}): Promise<FakeServer> {
  return startFake('voyage', options, voyageError, (ex) => serve(ex, { '/v1/rerank': voyageRerank }, bearerOk, 'Provided API key is invalid.'));
}

async function voyageRerank(ex: Exchange): Promise<void> {
  const body = obj(ex.rec.body);
  const model = str(body.model);
  if (!(await ex.begin(model, false))) return;
  const extra = unknownFields(body, VOYAGE_FIELDS);
  if (extra.length) return ex.error(400, `Unexpected request field(s): ${extra.join(', ')}`);
  const query = str(body.query);
  const docs = arr(body.documents);
  if (!model || query === undefined) return ex.error(400, 'Request is missing model or query');
  if (!docs.length || !docs.every((d) => typeof d === 'string')) return ex.error(400, 'documents must be a non-empty list of strings');
  if (body.top_k !== undefined && !positiveInt(body.top_k)) return ex.error(400, 'top_k must be a positive integer');
  const texts = docs as string[];
  const withDocs = body.return_documents === true;
  const data = rank(query, texts, body.top_k as number | undefined).map((r) => ({
    relevance_score: r.score,
    index: r.index,
    ...(withDocs ? { document: texts[r.index] } : {}),
  }));
  const tokens = texts.reduce((n, d) => n + wordCount(d), wordCount(query));
  ex.json(200, { object: 'list', data, model, usage: { total_tokens: tokens } });
}

// ---- Pinecone -----------------------------------------------------------------------------

const PINECONE_FIELDS = ['model', 'query', 'documents', 'top_n', 'return_documents', 'rank_fields', 'parameters'] as const;

export function startPineconeFake(options: FakeOptions = {}): Promise<FakeServer> {
  const keyOk = (ex: Exchange) => {
    const key = ex.rec.headers['api-key'];
    return !!key && (ex.apiKey === undefined || key === ex.apiKey);
  };
  return startFake('pinecone', options, pineconeError, (ex) => serve(ex, { '/rerank': pineconeRerank }, keyOk, 'Invalid API Key'));
}

async function pineconeRerank(ex: Exchange): Promise<void> {
  const body = obj(ex.rec.body);
  const model = str(body.model);
  if (!(await ex.begin(model, false))) return;
  const version = ex.rec.headers['x-pinecone-api-version'];
  if (version !== undefined && !/^\d{4}-\d{2}$/.test(version)) return ex.error(400, `Unsupported API version '${version}'`);
  const extra = unknownFields(body, PINECONE_FIELDS);
  if (extra.length) return ex.error(400, `Unknown field(s): ${extra.join(', ')}`);
  const query = str(body.query);
  if (!model || query === undefined) return ex.error(400, 'model and query are required');
  const docs = arr(body.documents);
  if (!docs.length || !docs.every((d) => d !== null && typeof d === 'object' && !Array.isArray(d))) {
    return ex.error(400, 'documents must be a non-empty list of objects');
  }
  const rankFields = body.rank_fields === undefined ? ['text'] : arr(body.rank_fields).map(String);
  const texts: string[] = [];
  for (const [i, d] of docs.entries()) {
    const fields = rankFields.map((f) => obj(d)[f]);
    if (!fields.every((f) => typeof f === 'string')) return ex.error(400, `Document ${i} is missing rank field(s) ${rankFields.join(', ')}`);
    texts.push(fields.join(' '));
  }
  const truncate = obj(body.parameters).truncate;
  if (truncate !== undefined && truncate !== 'END' && truncate !== 'NONE') return ex.error(400, 'parameters.truncate must be END or NONE');
  if (body.top_n !== undefined && !positiveInt(body.top_n)) return ex.error(400, 'top_n must be a positive integer');
  const withDocs = body.return_documents !== false;
  const data = rank(query, texts, body.top_n as number | undefined).map((r) => ({
    index: r.index,
    score: r.score,
    ...(withDocs ? { document: docs[r.index] } : {}),
  }));
  ex.json(200, { model, data, usage: { rerank_units: 1 } });
}

// ---- Azure AI (Cohere deployments) ----------------------------------------------------------

const AZURE_FIELDS = ['model', 'query', 'documents', 'top_n', 'max_tokens_per_doc', 'priority', 'return_documents'] as const;

export function startAzureAIFake(options: FakeOptions = {}): Promise<FakeServer> {
  const keyOk = (ex: Exchange) => {
    const key = bearer(ex.rec) ?? ex.rec.headers['api-key'];
    return !!key && (ex.apiKey === undefined || key === ex.apiKey);
  };
  const routes = { '/providers/cohere/v2/rerank': azureRerank, '/v2/rerank': azureRerank, '/v1/rerank': azureRerank };
  return startFake('azure-ai', options, azureAIError, (ex) => serve(ex, routes, keyOk, 'Access denied due to invalid subscription key or wrong API endpoint.'));
}

async function azureRerank(ex: Exchange): Promise<void> {
  const body = obj(ex.rec.body);
  const model = str(body.model);
  if (!(await ex.begin(model, false))) return;
  if (model?.toLowerCase().startsWith('cohere.')) return ex.error(404, `The deployment '${model}' does not exist.`);
  const extra = unknownFields(body, AZURE_FIELDS);
  if (extra.length) return ex.error(400, `invalid request: unknown field(s) ${extra.join(', ')}`);
  const query = str(body.query);
  const docs = arr(body.documents);
  if (!model || query === undefined) return ex.error(400, 'invalid request: model and query are required');
  if (!docs.length || !docs.every((d) => typeof d === 'string')) return ex.error(400, 'invalid request: documents must be a non-empty list of strings');
  if (body.top_n !== undefined && !positiveInt(body.top_n)) return ex.error(400, 'invalid request: top_n must be a positive integer');
  const texts = docs as string[];
  const withDocs = body.return_documents === true;
  const results = rank(query, texts, body.top_n as number | undefined).map((r) => ({
    index: r.index,
    relevance_score: r.score,
    ...(withDocs ? { document: { text: texts[r.index] } } : {}),
  }));
  ex.json(200, {
    id: `azure-rerank-${ex.rec.seq}`,
    results,
    meta: { api_version: { version: '2' }, billed_units: { search_units: Math.max(1, Math.ceil(texts.length / 100)) } },
  });
}
