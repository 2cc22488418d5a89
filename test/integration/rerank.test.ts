import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import type { LocalGateway } from '../../infra/local/server';
import { rank, startBedrockFake, startCohereFake, wordCount, type FakeServer, type RecordedRequest } from '../fakes';
import { startAzureAIFake, startJinaFake, startPineconeFake, startVoyageFake } from '../fakes/rerank';
import { call, errorOf, startTestGateway, type CallResult } from '../support/gateway';

// No functions/ module is imported statically: the gateway sets the environment first.
let gw: LocalGateway;
let cohere: FakeServer;
let jina: FakeServer;
let voyage: FakeServer;
let pinecone: FakeServer;
let bedrock: FakeServer;
let azure: FakeServer;

const AWS = { accessKeyId: 'AKIDRERANKTEST', secretAccessKey: 'rerank-secret-key-0123456789' };
const KEYS = { cohere: 'co-rerank-key', jina: 'jina_rerank_key', voyage: 'pa-rerank-key', pinecone: 'pc-rerank-key', azure: 'az-rerank-key' };

const QUERY = 'What is the capital of the United States?';
const DOCUMENTS = [
  'Carson City is the capital city of Nevada.',
  { text: 'Washington, D.C. is the capital of the United States.', source: 'wiki' },
  'Capital punishment exists in many states.',
  'Penguins swim.',
  'Saipan sits in the Pacific Ocean.',
];
const TEXTS = DOCUMENTS.map((d) => (typeof d === 'string' ? d : d.text));
/** The fakes' ranking of TEXTS for QUERY: indexes 1, 0, 2, 4, 3 with distinct scores. */
const RANKED = rank(QUERY, TEXTS);

type Slug = 'cohere' | 'jina' | 'voyage' | 'pinecone' | 'bedrock' | 'azure-ai';
interface Provider {
  slug: Slug;
  fake: () => FakeServer;
  model: string;
  path: string;
  headers: () => Record<string, string>;
}

const PROVIDERS: Provider[] = [
  {
    slug: 'cohere',
    fake: () => cohere,
    model: 'rerank-v3.5',
    path: '/v2/rerank',
    headers: () => ({ 'x-gateway-provider': 'cohere', 'x-gateway-custom-host': cohere.url, authorization: `Bearer ${KEYS.cohere}` }),
  },
  {
    slug: 'jina',
    fake: () => jina,
    model: 'jina-reranker-v2-base-multilingual',
    path: '/v1/rerank',
    headers: () => ({ 'x-gateway-provider': 'jina', 'x-gateway-custom-host': `${jina.url}/v1`, authorization: `Bearer ${KEYS.jina}` }),
  },
  {
    slug: 'voyage',
    fake: () => voyage,
    model: 'rerank-2.5',
    path: '/v1/rerank',
    headers: () => ({ 'x-gateway-provider': 'voyage', 'x-gateway-custom-host': `${voyage.url}/v1`, authorization: `Bearer ${KEYS.voyage}` }),
  },
  {
    slug: 'pinecone',
    fake: () => pinecone,
    model: 'bge-reranker-v2-m3',
    path: '/rerank',
    headers: () => ({ 'x-gateway-provider': 'pinecone', 'x-gateway-custom-host': pinecone.url, authorization: `Bearer ${KEYS.pinecone}` }),
  },
  {
    slug: 'bedrock',
    fake: () => bedrock,
    model: 'amazon.rerank-v1:0',
    path: '/rerank',
    headers: () => ({
      'x-gateway-provider': 'bedrock',
      'x-gateway-custom-host': bedrock.url,
      'x-gateway-aws-access-key-id': AWS.accessKeyId,
      'x-gateway-aws-secret-access-key': AWS.secretAccessKey,
      'x-gateway-aws-region': 'us-west-2',
    }),
  },
  {
    slug: 'azure-ai',
    fake: () => azure,
    model: 'cohere.rerank-v3.5',
    path: '/providers/cohere/v2/rerank',
    headers: () => ({ 'x-gateway-provider': 'azure-ai', 'x-gateway-custom-host': `${azure.url}/providers/cohere`, authorization: `Bearer ${KEYS.azure}` }),
  },
];
const bySlug = (slug: Slug) => PROVIDERS.find((p) => p.slug === slug)!;

/** The API contract, written from the table: nothing more, nothing less. */
const rerankResponseSchema = z.strictObject({
  object: z.literal('list'),
  results: z.array(
    z.strictObject({
      index: z.int().check(z.gte(0)),
      relevance_score: z.number(),
      document: z.optional(z.strictObject({ text: z.string() })),
    }),
  ),
  model: z.string().check(z.minLength(1)),
  id: z.string().check(z.minLength(1)),
  usage: z.strictObject({ search_units: z.int().check(z.gte(0)) }),
  provider: z.string().check(z.minLength(1)),
});

/** The invariants a schema cannot say: order, index range, documents iff asked. */
function expectRerankShape(res: CallResult, request: { documents: unknown[]; top_n?: number; return_documents?: boolean }, provider: string) {
  expect(res.status, res.text).toBe(200);
  const parsed = rerankResponseSchema.safeParse(res.body);
  expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
  const body = parsed.data!;
  expect(body.provider).toBe(provider);
  expect(body.results).toHaveLength(Math.min(request.top_n ?? request.documents.length, request.documents.length));
  const scores = body.results.map((r) => r.relevance_score);
  expect(scores).toEqual([...scores].sort((a, b) => b - a));
  expect(new Set(body.results.map((r) => r.index)).size).toBe(body.results.length);
  for (const r of body.results) {
    expect(r.index).toBeLessThan(request.documents.length);
    const original = request.documents[r.index];
    if (request.return_documents) expect(r.document).toEqual({ text: typeof original === 'string' ? original : (original as { text: string }).text });
    else expect(r).not.toHaveProperty('document');
  }
  return body;
}

const rerankCall = (headers: Record<string, string>, body: unknown) => call(gw, 'POST', '/v1/rerank', { headers, body });

const gatewayHeadersSentUpstream = (rec: RecordedRequest) => Object.keys(rec.headers).filter((h) => h.startsWith('x-gateway-'));

const SIGV4 = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/;

/**
 * Recompute the SigV4 signature of a request the Bedrock fake recorded, over exactly the
 * headers it lists as signed, and compare. (The fake itself only checks the shape here.)
 */
async function expectValidSigV4(rec: RecordedRequest, region: string, secretAccessKey = AWS.secretAccessKey) {
  const m = SIGV4.exec(rec.headers.authorization ?? '');
  expect(m, rec.headers.authorization).not.toBeNull();
  const [, accessKeyId, , signedRegion, service, signedList, signature] = m!;
  expect({ accessKeyId, signedRegion, service }).toEqual({ accessKeyId: AWS.accessKeyId, signedRegion: region, service: 'bedrock' });
  const signed = signedList!.split(';');
  expect(signed).toEqual(expect.arrayContaining(['host', 'x-amz-date']));
  const headers = Object.fromEntries(signed.map((h) => [h, rec.headers[h] ?? '']));
  const signer = new SignatureV4({
    credentials: { accessKeyId: accessKeyId!, secretAccessKey, sessionToken: rec.headers['x-amz-security-token'] },
    region,
    service: 'bedrock',
    sha256: Hash.bind(null, 'sha256'),
    applyChecksum: false,
  });
  const signingDate = new Date(rec.headers['x-amz-date']!.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'));
  const expected = await signer.sign(
    { method: rec.method, protocol: 'http:', hostname: '127.0.0.1', path: rec.path, query: rec.query, headers, body: rec.rawBody },
    { signingDate, signableHeaders: new Set(signed) },
  );
  return /Signature=([0-9a-f]{64})/.exec(expected.headers.authorization ?? '')?.[1] === signature;
}

async function logsOf(traceId: string): Promise<any[]> {
  let records: any[] = [];
  for (let i = 0; i < 100 && !records.length; i++) {
    records = (await call(gw, 'GET', `/v1/logs?trace_id=${traceId}`)).body.data;
    if (!records.length) await new Promise((r) => setTimeout(r, 50));
  }
  return records;
}

beforeAll(async () => {
  [cohere, jina, voyage, pinecone, bedrock, azure] = await Promise.all([
    startCohereFake({ apiKey: KEYS.cohere }),
    startJinaFake({ apiKey: KEYS.jina }),
    startVoyageFake({ apiKey: KEYS.voyage }),
    startPineconeFake(),
    startBedrockFake(),
    startAzureAIFake(),
  ]);
  gw = await startTestGateway();
  for (const body of [
    { slug: 'pine', provider: 'pinecone', api_key: 'pc-managed-secret', custom_host: pinecone.url },
    { slug: 'azure-rerank', provider: 'azure-ai', api_key: 'az-managed-secret', custom_host: `${azure.url}/providers/cohere` },
  ]) {
    const created = await call(gw, 'POST', '/v1/providers', { body });
    expect(created.status, created.text).toBe(200);
  }
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all([cohere, jina, voyage, pinecone, bedrock, azure].map((f) => f?.close()));
});
beforeEach(() => {
  for (const f of [cohere, jina, voyage, pinecone, bedrock, azure]) f.reset();
});

describe('POST /v1/rerank: the request each provider receives', () => {
  const full = {
    query: QUERY,
    documents: DOCUMENTS,
    top_n: 2,
    return_documents: true,
    max_tokens_per_doc: 512,
    priority: 1,
    rank_fields: ['text'],
    truncation: true,
    parameters: { truncate: 'END' },
  };

  const expectedUpstream: Record<Slug, (model: string) => unknown> = {
    // Cohere v2: no return_documents (filled from the request), rank_fields, truncation, parameters.
    cohere: (model) => ({ model, query: QUERY, documents: TEXTS, top_n: 2, max_tokens_per_doc: 512, priority: 1 }),
    // Jina: top_n and return_documents; no max_tokens_per_doc, priority, rank_fields, truncation, parameters.
    jina: (model) => ({ model, query: QUERY, documents: TEXTS, top_n: 2, return_documents: true }),
    // Voyage: top_n -> top_k, return_documents, truncation; nothing else.
    voyage: (model) => ({ query: QUERY, documents: TEXTS, model, top_k: 2, return_documents: true, truncation: true }),
    // Pinecone: documents with ids, rank_fields, parameters (truncation only fills parameters.truncate when unset).
    pinecone: (model) => ({
      model,
      query: QUERY,
      documents: [
        { id: 'doc_0', text: TEXTS[0] },
        { text: TEXTS[1], source: 'wiki' },
        { id: 'doc_2', text: TEXTS[2] },
        { id: 'doc_3', text: TEXTS[3] },
        { id: 'doc_4', text: TEXTS[4] },
      ],
      top_n: 2,
      return_documents: true,
      rank_fields: ['text'],
      parameters: { truncate: 'END' },
    }),
    // Bedrock: one TEXT query, INLINE TEXT sources, the model ARN, top_n -> numberOfResults, parameters -> additionalModelRequestFields.
    bedrock: (model) => ({
      queries: [{ type: 'TEXT', textQuery: { text: QUERY } }],
      sources: TEXTS.map((text) => ({ type: 'INLINE', inlineDocumentSource: { type: 'TEXT', textDocument: { text } } })),
      rerankingConfiguration: {
        type: 'BEDROCK_RERANKING_MODEL',
        bedrockRerankingConfiguration: {
          modelConfiguration: { modelArn: `arn:aws:bedrock:us-west-2::foundation-model/${model}`, additionalModelRequestFields: { truncate: 'END' } },
          numberOfResults: 2,
        },
      },
    }),
    // Azure AI: Cohere v2 with the `cohere.` prefix stripped.
    'azure-ai': (model) => ({ model: model.replace(/^cohere\./, ''), query: QUERY, documents: TEXTS, top_n: 2, max_tokens_per_doc: 512, priority: 1 }),
  };

  const expectedAuth: Record<Slug, (rec: RecordedRequest) => void | Promise<void>> = {
    cohere: (rec) => expect(rec.headers.authorization).toBe(`Bearer ${KEYS.cohere}`),
    jina: (rec) => expect(rec.headers.authorization).toBe(`Bearer ${KEYS.jina}`),
    voyage: (rec) => expect(rec.headers.authorization).toBe(`Bearer ${KEYS.voyage}`),
    pinecone: (rec) => {
      expect(rec.headers['api-key']).toBe(KEYS.pinecone);
      expect(rec.headers['x-pinecone-api-version']).toBe('2025-04');
      expect(rec.headers.authorization).toBeUndefined();
    },
    bedrock: async (rec) => {
      expect(rec.headers['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);
      expect(await expectValidSigV4(rec, 'us-west-2')).toBe(true);
    },
    'azure-ai': (rec) => expect(rec.headers.authorization).toBe(`Bearer ${KEYS.azure}`),
  };

  /** search_units as each fake bills them, through the adapter's rule. */
  const expectedUnits: Record<Slug, number> = {
    cohere: 1,
    jina: TEXTS.reduce((n, d) => n + wordCount(d) + wordCount(QUERY), 0),
    voyage: TEXTS.reduce((n, d) => n + wordCount(d), wordCount(QUERY)),
    pinecone: 1,
    bedrock: 1,
    'azure-ai': 1,
  };

  it.each(PROVIDERS.map((p) => [p.slug, p] as const))('%s: exact upstream request and normalised response', async (_slug, p) => {
    const res = await rerankCall(p.headers(), { model: p.model, ...full });
    const body = expectRerankShape(res, full, p.slug);
    const rec = p.fake().last()!;
    expect(p.fake().count()).toBe(1);
    expect(rec.method).toBe('POST');
    expect(rec.path).toBe(p.path);
    expect(rec.headers['content-type']).toMatch(/^application\/json/);
    expect(rec.body).toEqual(expectedUpstream[p.slug](p.model));
    await expectedAuth[p.slug](rec);
    expect(gatewayHeadersSentUpstream(rec)).toEqual([]);
    expect(body).toEqual({
      object: 'list',
      id: expect.any(String),
      results: RANKED.slice(0, 2).map((r) => ({ index: r.index, relevance_score: r.score, document: { text: TEXTS[r.index] } })),
      model: p.model,
      usage: { search_units: expectedUnits[p.slug] },
      provider: p.slug,
    });
    expect(res.headers.get('x-gateway-provider')).toBe(p.slug);
    if (p.slug === 'cohere') expect(body.id).toBe(`fake-rerank-${rec.seq}`);
    else if (p.slug === 'azure-ai') expect(body.id).toBe(`azure-rerank-${rec.seq}`);
    else expect(body.id).toMatch(/^rerank-[0-9a-z]{26}$/);
  });

  it('a minimal body sends only what was given (and the documented defaults)', async () => {
    const minimal = { query: QUERY, documents: ['alpha', { text: 'beta', lang: 'en' }] };
    const sent: Record<string, unknown> = {};
    for (const p of PROVIDERS) {
      const res = await rerankCall(p.headers(), { model: p.model, ...minimal });
      expect(res.status, `${p.slug}: ${res.text}`).toBe(200);
      sent[p.slug] = p.fake().last()!.body;
    }
    expect(sent).toEqual({
      cohere: { model: 'rerank-v3.5', query: QUERY, documents: ['alpha', 'beta'] },
      jina: { model: 'jina-reranker-v2-base-multilingual', query: QUERY, documents: ['alpha', 'beta'], return_documents: false },
      voyage: { query: QUERY, documents: ['alpha', 'beta'], model: 'rerank-2.5' },
      pinecone: {
        model: 'bge-reranker-v2-m3',
        query: QUERY,
        documents: [
          { id: 'doc_0', text: 'alpha' },
          { text: 'beta', lang: 'en' },
        ],
        return_documents: false,
      },
      bedrock: {
        queries: [{ type: 'TEXT', textQuery: { text: QUERY } }],
        sources: ['alpha', 'beta'].map((text) => ({ type: 'INLINE', inlineDocumentSource: { type: 'TEXT', textDocument: { text } } })),
        rerankingConfiguration: {
          type: 'BEDROCK_RERANKING_MODEL',
          bedrockRerankingConfiguration: {
            modelConfiguration: { modelArn: 'arn:aws:bedrock:us-west-2::foundation-model/amazon.rerank-v1:0' },
            numberOfResults: 2,
          },
        },
      },
      'azure-ai': { model: 'rerank-v3.5', query: QUERY, documents: ['alpha', 'beta'] },
    });
  });

  it('Pinecone: `truncation` becomes parameters.truncate when the caller did not set it', async () => {
    const p = bySlug('pinecone');
    const res = await rerankCall(p.headers(), { model: p.model, query: QUERY, documents: ['a b'], truncation: false, parameters: { custom: 1 } });
    expect(res.status, res.text).toBe(200);
    expect((pinecone.last()!.body as any).parameters).toEqual({ custom: 1, truncate: 'NONE' });
  });

  it('Bedrock: a full model ARN is sent as it is', async () => {
    const arn = 'arn:aws:bedrock:us-west-2::foundation-model/cohere.rerank-v3-5:0';
    const res = await rerankCall(bySlug('bedrock').headers(), { model: arn, query: QUERY, documents: TEXTS });
    expect(res.status, res.text).toBe(200);
    expect((bedrock.last()!.body as any).rerankingConfiguration.bedrockRerankingConfiguration.modelConfiguration.modelArn).toBe(arn);
    expect(res.body.model).toBe(arn);
  });
});

describe('the same request body against all six providers', () => {
  const body = { query: QUERY, documents: DOCUMENTS, top_n: 3, return_documents: true };

  it.each(PROVIDERS.map((p) => [p.slug, p] as const))('%s yields the shape', async (_slug, p) => {
    const res = await rerankCall(p.headers(), { model: p.model, ...body });
    const out = expectRerankShape(res, body, p.slug);
    expect(out.model).toBe(p.model);
    expect(out.results.map((r) => r.index)).toEqual(RANKED.slice(0, 3).map((r) => r.index));
  });
});

describe('ordering, top_n and return_documents', () => {
  it.each(PROVIDERS.map((p) => [p.slug, p] as const))('%s: without top_n every document comes back, sorted, without documents', async (_slug, p) => {
    const request = { query: QUERY, documents: DOCUMENTS };
    const res = await rerankCall(p.headers(), { model: p.model, ...request });
    const out = expectRerankShape(res, request, p.slug);
    expect(out.results).toEqual(RANKED.map((r) => ({ index: r.index, relevance_score: r.score })));
  });

  it.each(PROVIDERS.map((p) => [p.slug, p] as const))('%s: top_n 1 and return_documents false', async (_slug, p) => {
    const request = { query: QUERY, documents: DOCUMENTS, top_n: 1, return_documents: false };
    const res = await rerankCall(p.headers(), { model: p.model, ...request });
    const out = expectRerankShape(res, request, p.slug);
    expect(out.results).toEqual([{ index: 1, relevance_score: RANKED[0]!.score }]);
  });

  it('top_n larger than the document count returns every document', async () => {
    for (const p of PROVIDERS) {
      const request = { query: QUERY, documents: TEXTS.slice(0, 3), top_n: 50 };
      expectRerankShape(await rerankCall(p.headers(), { model: p.model, ...request }), request, p.slug);
    }
  });

  it('sorts an unsorted provider answer, cuts it to top_n, drops results that point nowhere', async () => {
    cohere.setBehaviour({
      respond: () => ({
        status: 200,
        body: {
          id: 'unsorted-1',
          results: [
            { index: 0, relevance_score: 0.1 },
            { index: 2, relevance_score: 0.9 },
            { index: 9, relevance_score: 0.99 },
            { index: 1, relevance_score: 0.5 },
            { index: 3, relevance_score: 0.3 },
          ],
          meta: { billed_units: { search_units: 2 } },
        },
      }),
    });
    const request = { query: QUERY, documents: TEXTS.slice(0, 4), top_n: 3, return_documents: true };
    const res = await rerankCall(bySlug('cohere').headers(), { model: 'rerank-v3.5', ...request });
    const out = expectRerankShape(res, request, 'cohere');
    expect(out).toMatchObject({ id: 'unsorted-1', usage: { search_units: 2 } });
    expect(out.results).toEqual([
      { index: 2, relevance_score: 0.9, document: { text: TEXTS[2] } },
      { index: 1, relevance_score: 0.5, document: { text: TEXTS[1] } },
      { index: 3, relevance_score: 0.3, document: { text: TEXTS[3] } },
    ]);
  });

  it('a provider body that is not JSON is a 502 naming the provider', async () => {
    cohere.setBehaviour({ respond: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: 'upstream proxy error' }) });
    const res = await rerankCall(bySlug('cohere').headers(), { model: 'rerank-v3.5', query: 'q', documents: ['a'] });
    expect(res.status, res.text).toBe(502);
    expect(errorOf(res)).toMatchObject({ code: 'invalid_upstream_response', message: expect.stringContaining("Provider 'cohere'") });
  });

  it('a provider that echoes documents as plain strings still answers {text}', async () => {
    voyage.setBehaviour({
      respond: () => ({
        status: 200,
        body: { object: 'list', data: [{ index: 0, relevance_score: 0.4, document: 'first' }], model: 'rerank-2.5', usage: { total_tokens: 3 } },
      }),
    });
    const res = await rerankCall(bySlug('voyage').headers(), { model: 'rerank-2.5', query: 'q', documents: ['first'], return_documents: true });
    expect(res.body.results).toEqual([{ index: 0, relevance_score: 0.4, document: { text: 'first' } }]);
  });

  it('usage.search_units is always an integer, computed when the provider bills none', async () => {
    const many = Array.from({ length: 250 }, (_, i) => `document number ${i}`);
    const res = await rerankCall(bySlug('bedrock').headers(), { model: 'amazon.rerank-v1:0', query: 'number 7', documents: many, top_n: 2 });
    expect(res.status, res.text).toBe(200);
    expect(res.body.usage).toEqual({ search_units: 3 });
    jina.setBehaviour({ respond: () => ({ status: 200, body: { model: 'm', results: [{ index: 0, relevance_score: 0.5 }] } }) });
    const noUsage = await rerankCall(bySlug('jina').headers(), { model: 'm', query: 'q', documents: ['a'] });
    expect(noUsage.body.usage).toEqual({ search_units: 1 });
  });
});

describe('validation -> 400 naming the field', () => {
  const valid = { model: 'rerank-v3.5', query: QUERY, documents: ['a', 'b'] };
  const cases: Array<[string, unknown, string]> = [
    ['documents empty', { ...valid, documents: [] }, 'documents'],
    ['documents missing', { model: 'm', query: 'q' }, 'documents'],
    ['documents not an array', { ...valid, documents: 'a' }, 'documents'],
    ['a document that is a number', { ...valid, documents: ['a', 3] }, 'documents[1]'],
    ['a document object without text', { ...valid, documents: [{ title: 'x' }] }, 'documents[0]'],
    ['top_n 0', { ...valid, top_n: 0 }, 'top_n'],
    ['top_n negative', { ...valid, top_n: -2 }, 'top_n'],
    ['top_n not an integer', { ...valid, top_n: 1.5 }, 'top_n'],
    ['max_tokens_per_doc 0', { ...valid, max_tokens_per_doc: 0 }, 'max_tokens_per_doc'],
    ['max_tokens_per_doc a string', { ...valid, max_tokens_per_doc: '10' }, 'max_tokens_per_doc'],
    ['model missing', { query: 'q', documents: ['a'] }, 'model'],
    ['model empty', { ...valid, model: '' }, 'model'],
    ['query missing', { model: 'm', documents: ['a'] }, 'query'],
    ['return_documents not a boolean', { ...valid, return_documents: 'yes' }, 'return_documents'],
    ['truncation not a boolean', { ...valid, truncation: 'END' }, 'truncation'],
    ['priority not a number', { ...valid, priority: 'high' }, 'priority'],
    ['rank_fields not an array', { ...valid, rank_fields: 'text' }, 'rank_fields'],
    ['rank_fields empty', { ...valid, rank_fields: [] }, 'rank_fields'],
    ['parameters not an object', { ...valid, parameters: ['x'] }, 'parameters'],
    ['an unknown field', { ...valid, top_k: 3 }, 'top_k'],
  ];

  it.each(cases)('%s', async (_name, body, param) => {
    const res = await rerankCall(bySlug('cohere').headers(), body);
    expect(res.status, res.text).toBe(400);
    const err = errorOf(res);
    expect(err).toMatchObject({ type: 'invalid_request_error', param });
    expect(err.message).toContain(param);
    expect(cohere.count()).toBe(0);
  });

  it('a body that is not a JSON object', async () => {
    for (const body of ['[1,2]', '"text"', '{not json']) {
      const res = await rerankCall(bySlug('cohere').headers(), body);
      expect(res.status, body).toBe(400);
      expect(errorOf(res).type).toBe('invalid_request_error');
    }
    expect(cohere.count()).toBe(0);
  });

  it('null options count as absent', async () => {
    const res = await rerankCall(bySlug('cohere').headers(), { ...valid, top_n: null, return_documents: null, parameters: null });
    expectRerankShape(res, { documents: valid.documents }, 'cohere');
  });

  it('a provider without rerank, and missing provider settings, are 400s', async () => {
    const openai = await rerankCall({ 'x-gateway-provider': 'openai', authorization: 'Bearer sk-x' }, valid);
    expect(openai.status).toBe(400);
    expect(errorOf(openai)).toMatchObject({ code: 'unsupported_operation', param: 'x-gateway-provider' });
    const noKey = await rerankCall({ 'x-gateway-provider': 'jina', 'x-gateway-custom-host': `${jina.url}/v1` }, valid);
    expect(noKey.status).toBe(400);
    expect(errorOf(noKey).code).toBe('missing_provider_key');
    const noAws = await rerankCall({ 'x-gateway-provider': 'bedrock', 'x-gateway-custom-host': bedrock.url, 'x-gateway-aws-region': 'us-west-2' }, valid);
    expect(noAws.status).toBe(400);
    expect(errorOf(noAws).param).toBe('x-gateway-aws-access-key-id');
    const noResource = await rerankCall({ 'x-gateway-provider': 'azure-ai', authorization: 'Bearer k' }, valid);
    expect(noResource.status).toBe(400);
    expect(errorOf(noResource).param).toBe('x-gateway-azure-resource-name');
    expect(jina.count() + bedrock.count() + azure.count()).toBe(0);
  });
});

describe('provider errors pass through with their status and body', () => {
  const expected: Record<Slug, [string, number, unknown]> = {
    cohere: ['rerank-fail-429', 429, { id: 'fake-error', message: expect.any(String) }],
    jina: ['jina-fail-422', 422, { detail: expect.any(String) }],
    voyage: ['rerank-fail-500', 500, { detail: expect.any(String) }],
    pinecone: ['bge-fail-429', 429, { error: { code: 'RESOURCE_EXHAUSTED', message: expect.any(String) }, status: 429 }],
    bedrock: ['amazon.rerank-fail-503', 503, { message: expect.any(String) }],
    'azure-ai': ['cohere.rerank-fail-401', 401, { error: { code: 'Unauthorized', message: expect.any(String) } }],
  };

  it.each(PROVIDERS.map((p) => [p.slug, p] as const))('%s', async (_slug, p) => {
    const [model, status, body] = expected[p.slug];
    const res = await rerankCall(p.headers(), { model, query: QUERY, documents: TEXTS });
    expect(res.status).toBe(status);
    expect(res.body).toEqual(body);
    expect(res.headers.get('x-gateway-provider')).toBe(p.slug);
    expect(p.fake().count()).toBe(1);
  });

  it('a provider validation error (Pinecone rank field the documents lack) comes back as sent', async () => {
    const p = bySlug('pinecone');
    const res = await rerankCall(p.headers(), { model: p.model, query: QUERY, documents: TEXTS, rank_fields: ['title'] });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { code: 'INVALID_ARGUMENT' }, status: 400 });
  });

  it('Azure AI rejects a `cohere.`-prefixed deployment name, so the gateway must strip it', async () => {
    const res = await rerankCall(bySlug('azure-ai').headers(), { model: 'cohere.rerank-v3.5', query: QUERY, documents: ['a'] });
    expect(res.status, res.text).toBe(200);
    expect((azure.last()!.body as any).model).toBe('rerank-v3.5');
    expect(res.body.model).toBe('cohere.rerank-v3.5');
  });
});

describe('Bedrock SigV4', () => {
  it("signs with service `bedrock`, the region and the caller's credentials", async () => {
    const res = await rerankCall(
      { ...bySlug('bedrock').headers(), 'x-gateway-aws-region': 'eu-central-1' },
      { model: 'amazon.rerank-v1:0', query: QUERY, documents: TEXTS, top_n: 1 },
    );
    expect(res.status, res.text).toBe(200);
    const rec = bedrock.last()!;
    expect(rec.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDRERANKTEST\/\d{8}\/eu-central-1\/bedrock\/aws4_request, /);
    expect(await expectValidSigV4(rec, 'eu-central-1')).toBe(true);
    expect(await expectValidSigV4(rec, 'eu-central-1', 'some-other-secret')).toBe(false);
    expect((rec.body as any).rerankingConfiguration.bedrockRerankingConfiguration.modelConfiguration.modelArn).toBe(
      'arn:aws:bedrock:eu-central-1::foundation-model/amazon.rerank-v1:0',
    );
  });

  it('a session token is signed and sent', async () => {
    const res = await rerankCall(
      { ...bySlug('bedrock').headers(), 'x-gateway-aws-session-token': 'session-token-xyz' },
      { model: 'amazon.rerank-v1:0', query: 'q', documents: ['a'] },
    );
    expect(res.status, res.text).toBe(200);
    const rec = bedrock.last()!;
    expect(rec.headers['x-amz-security-token']).toBe('session-token-xyz');
    expect(rec.headers.authorization).toMatch(/SignedHeaders=[^,]*x-amz-security-token/);
    expect(await expectValidSigV4(rec, 'us-west-2')).toBe(true);
  });

  it("without AWS credentials a Bedrock API key goes as Bearer; a SigV4-only endpoint's 403 comes back as sent", async () => {
    const res = await rerankCall(
      { 'x-gateway-provider': 'bedrock', 'x-gateway-custom-host': bedrock.url, 'x-gateway-aws-region': 'us-west-2', authorization: 'Bearer bedrock-api-key' },
      { model: 'amazon.rerank-v1:0', query: QUERY, documents: TEXTS },
    );
    expect(bedrock.last()!.headers.authorization).toBe('Bearer bedrock-api-key');
    expect(res.status).toBe(403);
    expect(res.headers.get('x-amzn-errortype')).toMatch(/^InvalidSignatureException/);
    expect(res.body).toEqual({ message: 'Missing Authentication Token' });
  });
});

describe('configs and managed providers', () => {
  it('falls back from a failing rerank provider to a healthy one (inline config)', async () => {
    const config = {
      strategy: { mode: 'fallback' },
      targets: [
        { provider: 'cohere', api_key: KEYS.cohere, custom_host: cohere.url, override_params: { model: 'rerank-fail-503' } },
        { provider: 'voyage', api_key: KEYS.voyage, custom_host: `${voyage.url}/v1`, override_params: { model: 'rerank-2.5' } },
      ],
    };
    const request = { model: 'rerank-v3.5', query: QUERY, documents: DOCUMENTS, top_n: 2, return_documents: true };
    const res = await rerankCall({ 'x-gateway-config': JSON.stringify(config) }, request);
    const out = expectRerankShape(res, request, 'voyage');
    expect(out.model).toBe('rerank-2.5');
    expect(out.results.map((r) => r.index)).toEqual([1, 0]);
    expect(res.headers.get('x-gateway-provider')).toBe('voyage');
    expect(res.headers.get('x-gateway-last-used-option-index')).toBe('config.targets[1]');
    expect(cohere.count()).toBe(1);
    expect((cohere.last()!.body as any).model).toBe('rerank-fail-503');
    expect(voyage.last()!.body).toEqual({ query: QUERY, documents: TEXTS, model: 'rerank-2.5', top_k: 2, return_documents: true });
  });

  it('falls back from Bedrock to a managed Pinecone provider', async () => {
    bedrock.setBehaviour({ status: 403 });
    const config = {
      strategy: { mode: 'fallback', on_status_codes: [403, 429, 500, 503] },
      targets: [
        {
          provider: 'bedrock',
          custom_host: bedrock.url,
          aws_access_key_id: AWS.accessKeyId,
          aws_secret_access_key: AWS.secretAccessKey,
          aws_region: 'us-west-2',
        },
        { provider: '@pine', override_params: { model: 'pinecone-rerank-v0' } },
      ],
    };
    const request = { model: 'amazon.rerank-v1:0', query: QUERY, documents: DOCUMENTS };
    const res = await rerankCall({ 'x-gateway-config': JSON.stringify(config) }, request);
    expectRerankShape(res, request, 'pinecone');
    expect(bedrock.count()).toBe(1);
    expect(pinecone.last()!.headers['api-key']).toBe('pc-managed-secret');
  });

  it('a rerank provider error is final when the fallback does not cover its status', async () => {
    const config = {
      strategy: { mode: 'fallback', on_status_codes: [503] },
      targets: [
        { provider: 'jina', api_key: KEYS.jina, custom_host: `${jina.url}/v1`, override_params: { model: 'jina-fail-429' } },
        { provider: 'voyage', api_key: KEYS.voyage, custom_host: `${voyage.url}/v1` },
      ],
    };
    const res = await rerankCall({ 'x-gateway-config': JSON.stringify(config) }, { model: 'rerank-2.5', query: 'q', documents: ['a'] });
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ detail: expect.any(String) });
    expect(voyage.count()).toBe(0);
  });

  it('config override_params are held to the same rules', async () => {
    const config = { provider: 'cohere', api_key: KEYS.cohere, custom_host: cohere.url, override_params: { top_n: 0 } };
    const res = await rerankCall({ 'x-gateway-config': JSON.stringify(config) }, { model: 'rerank-v3.5', query: 'q', documents: ['a'] });
    expect(res.status).toBe(400);
    expect(errorOf(res).param).toBe('override_params.top_n');
    expect(cohere.count()).toBe(0);
  });

  it('managed providers (`@slug`) supply the credentials, Azure AI included', async () => {
    const pine = await rerankCall(
      { 'x-gateway-provider': '@pine', authorization: 'Bearer sdk-placeholder' },
      { model: 'bge-reranker-v2-m3', query: QUERY, documents: TEXTS },
    );
    expectRerankShape(pine, { documents: TEXTS }, 'pinecone');
    expect(pinecone.last()!.headers['api-key']).toBe('pc-managed-secret');
    const az = await rerankCall({ 'x-gateway-virtual-key': 'azure-rerank' }, { model: 'cohere.rerank-v3.5', query: QUERY, documents: TEXTS, top_n: 2 });
    expectRerankShape(az, { documents: TEXTS, top_n: 2 }, 'azure-ai');
    expect(azure.last()!.headers.authorization).toBe('Bearer az-managed-secret');
    expect(azure.last()!.path).toBe('/providers/cohere/v2/rerank');
  });

  it('a cached answer (config cache) is replayed through the same normalisation', async () => {
    const config = { provider: 'cohere', api_key: KEYS.cohere, custom_host: cohere.url, cache: { mode: 'simple' } };
    const request = { model: 'rerank-v3.5', query: `cache me ${Date.now()}`, documents: TEXTS, return_documents: true };
    const headers = { 'x-gateway-config': JSON.stringify(config) };
    const first = await rerankCall(headers, request);
    expectRerankShape(first, request, 'cohere');
    expect(first.headers.get('x-gateway-cache-status')).toBe('MISS');
    // The cache is written once the first answer has been sent: ask until it is there.
    let second = await rerankCall(headers, request);
    let upstreamCalls = cohere.count();
    for (let i = 0; i < 100 && second.headers.get('x-gateway-cache-status') !== 'HIT'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      upstreamCalls = cohere.count();
      second = await rerankCall(headers, request);
    }
    expect(second.headers.get('x-gateway-cache-status')).toBe('HIT');
    expect(cohere.count()).toBe(upstreamCalls);
    expectRerankShape(second, request, 'cohere');
    // The provider's id of whichever call was stored; everything else is the same answer.
    expect(second.body.id).toMatch(/^fake-rerank-\d+$/);
    expect({ ...second.body, id: '' }).toEqual({ ...first.body, id: '' });
  });
});

describe('request log and tracing headers', () => {
  it('records trace, span, parent span, span name and metadata with the rerank facts', async () => {
    const traceId = `rerank-trace-${Date.now()}`;
    const res = await rerankCall(
      {
        ...bySlug('cohere').headers(),
        'x-gateway-trace-id': traceId,
        'x-gateway-span-id': 'span-2',
        'x-gateway-parent-span-id': 'span-1',
        'x-gateway-span-name': 'rerank search hits',
        'x-gateway-metadata': JSON.stringify({ _user: 'u-7', team: 'search' }),
      },
      { model: 'rerank-v3.5', query: QUERY, documents: TEXTS, top_n: 2 },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gateway-trace-id')).toBe(traceId);
    const records = await logsOf(traceId);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      trace_id: traceId,
      route: 'rerank',
      path: '/v1/rerank',
      provider: 'cohere',
      model: 'rerank-v3.5',
      status: 200,
      metadata: { _user: 'u-7', team: 'search' },
      span_id: 'span-2',
      parent_span_id: 'span-1',
      span_name: 'rerank search hits',
      search_units: 1,
      documents: TEXTS.length,
    });
    expect(JSON.stringify(records)).not.toContain(KEYS.cohere);
  });

  it('records a rejected request too, with its status and span', async () => {
    const traceId = `rerank-bad-${Date.now()}`;
    const res = await rerankCall(
      { ...bySlug('cohere').headers(), 'x-gateway-trace-id': traceId, 'x-gateway-span-id': 'span-9' },
      { model: 'm', query: 'q', documents: [] },
    );
    expect(res.status).toBe(400);
    const records = await logsOf(traceId);
    expect(records[0]).toMatchObject({ route: 'rerank', status: 400, span_id: 'span-9' });
  });

  it('a malformed span header is a 400 naming it', async () => {
    for (const [header, value] of [
      ['x-gateway-span-id', 'has spaces'],
      ['x-gateway-parent-span-id', 'x'.repeat(200)],
      ['x-gateway-span-name', 'n'.repeat(300)],
    ] as const) {
      const res = await rerankCall({ ...bySlug('cohere').headers(), [header]: value }, { model: 'm', query: 'q', documents: ['a'] });
      expect(res.status, header).toBe(400);
      expect(errorOf(res).param).toBe(header);
    }
    const metadata = await rerankCall({ ...bySlug('cohere').headers(), 'x-gateway-metadata': 'not json' }, { model: 'm', query: 'q', documents: ['a'] });
    expect(errorOf(metadata).param).toBe('x-gateway-metadata');
    expect(cohere.count()).toBe(0);
  });
});
