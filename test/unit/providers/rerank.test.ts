import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../functions/shared/errors';
import { jina } from '../../../functions/providers/jina';
import { pinecone } from '../../../functions/providers/pinecone';
import { voyage } from '../../../functions/providers/voyage';
import type { RerankRequest } from '../../../functions/providers/types';
import { ctx } from './stream-helpers';

const documents: RerankRequest['documents'] = [
  'Carson City is the capital city of the American state of Nevada.',
  { text: 'Washington, D.C. is the capital of the United States.', source: 'wiki' },
  'Capital punishment has existed in the United States since before it was a country.',
];
const full: RerankRequest = {
  model: 'model-x',
  query: 'What is the capital of the United States?',
  documents,
  top_n: 2,
  return_documents: true,
  max_tokens_per_doc: 100,
  priority: 1,
  rank_fields: ['text'],
  truncation: false,
  parameters: { foo: 'bar' },
};
const sendOf = (req: { body?: unknown }) => JSON.parse(req.body as string);

describe('jina', () => {
  it('posts to /v1/rerank with Bearer auth and drops fields Jina lacks', () => {
    const req = jina.rerank!.request(full, { provider: 'jina', apiKey: 'jina_key' });
    expect(req.url).toBe('https://api.jina.ai/v1/rerank');
    expect(req.headers).toEqual({ 'content-type': 'application/json', authorization: 'Bearer jina_key' });
    expect(sendOf(req)).toEqual({
      model: 'model-x',
      query: full.query,
      documents: [documents[0], 'Washington, D.C. is the capital of the United States.', documents[2]],
      top_n: 2,
      return_documents: true,
    });
    expect(sendOf(jina.rerank!.request({ model: 'm', query: 'q', documents: ['a'] }, { provider: 'jina', apiKey: 'k' })).return_documents).toBe(false);
  });

  it('maps results (document as object or string) and tokens to search units', () => {
    const upstream = {
      model: 'jina-reranker-v2-base-multilingual',
      usage: { total_tokens: 38, prompt_tokens: 38 },
      results: [
        { index: 1, document: { text: 'Washington, D.C. is the capital of the United States.' }, relevance_score: 0.9 },
        { index: 2, document: 'Capital punishment has existed…', relevance_score: 0.1 },
      ],
    };
    expect(jina.rerank!.response(upstream, full, ctx({ id: 'rr-1' }))).toEqual({
      object: 'list',
      id: 'rr-1',
      results: [
        { index: 1, relevance_score: 0.9, document: { text: 'Washington, D.C. is the capital of the United States.' } },
        { index: 2, relevance_score: 0.1, document: { text: 'Capital punishment has existed…' } },
      ],
      model: 'model-x',
      usage: { search_units: 38 },
      provider: 'jina',
    });
    const bare = jina.rerank!.response(upstream, { ...full, return_documents: false }, ctx());
    expect(bare.results.every((r) => !('document' in r))).toBe(true);
  });
});

describe('voyage', () => {
  it('renames top_n to top_k, sends string documents, drops fields Voyage lacks', () => {
    const req = voyage.rerank!.request(full, { provider: 'voyage', apiKey: 'pa-key' });
    expect(req.url).toBe('https://api.voyageai.com/v1/rerank');
    expect(req.headers.authorization).toBe('Bearer pa-key');
    expect(sendOf(req)).toEqual({
      query: full.query,
      documents: [documents[0], 'Washington, D.C. is the capital of the United States.', documents[2]],
      model: 'model-x',
      top_k: 2,
      return_documents: true,
      truncation: false,
    });
  });

  it('maps data -> results (sorted), document string -> {text}, tokens -> search units', () => {
    const upstream = {
      object: 'list',
      data: [
        { relevance_score: 0.3, index: 0, document: documents[0] },
        { relevance_score: 0.8, index: 1, document: 'Washington, D.C. is the capital of the United States.' },
      ],
      model: 'rerank-2.5',
      usage: { total_tokens: 55 },
    };
    const out = voyage.rerank!.response(upstream, full, ctx());
    expect(out.results).toEqual([
      { index: 1, relevance_score: 0.8, document: { text: 'Washington, D.C. is the capital of the United States.' } },
      { index: 0, relevance_score: 0.3, document: { text: documents[0] } },
    ]);
    expect(out.usage).toEqual({ search_units: 55 });
    expect(out.provider).toBe('voyage');
  });
});

describe('pinecone', () => {
  it('sends Api-Key and the API version, ids for string documents, truncation as parameters.truncate', () => {
    const req = pinecone.rerank!.request(full, { provider: 'pinecone', apiKey: 'pc-key' });
    expect(req.url).toBe('https://api.pinecone.io/rerank');
    expect(req.headers).toEqual({ 'content-type': 'application/json', 'api-key': 'pc-key', 'x-pinecone-api-version': '2025-04' });
    expect(sendOf(req)).toEqual({
      model: 'model-x',
      query: full.query,
      documents: [
        { id: 'doc_0', text: documents[0] },
        { text: 'Washington, D.C. is the capital of the United States.', source: 'wiki' },
        { id: 'doc_2', text: documents[2] },
      ],
      top_n: 2,
      return_documents: true,
      rank_fields: ['text'],
      parameters: { foo: 'bar', truncate: 'NONE' },
    });
    const minimal = sendOf(pinecone.rerank!.request({ model: 'bge-reranker-v2-m3', query: 'q', documents: ['a'] }, { provider: 'pinecone', apiKey: 'k' }));
    expect(minimal).toEqual({ model: 'bge-reranker-v2-m3', query: 'q', documents: [{ id: 'doc_0', text: 'a' }], return_documents: false });
  });

  it('maps score -> relevance_score and rerank_units -> search units', () => {
    const upstream = {
      model: 'bge-reranker-v2-m3',
      data: [
        { index: 2, score: 0.01, document: { id: 'doc_2', text: documents[2] } },
        { index: 1, score: 0.97, document: { text: 'Washington, D.C. is the capital of the United States.', source: 'wiki' } },
      ],
      usage: { rerank_units: 1 },
    };
    expect(pinecone.rerank!.response(upstream, full, ctx({ id: 'rr' }))).toEqual({
      object: 'list',
      id: 'rr',
      results: [
        { index: 1, relevance_score: 0.97, document: { text: 'Washington, D.C. is the capital of the United States.' } },
        { index: 2, relevance_score: 0.01, document: { text: documents[2] } },
      ],
      model: 'model-x',
      usage: { search_units: 1 },
      provider: 'pinecone',
    });
  });
});

describe('rerank providers: custom host, forwarded headers, missing key', () => {
  it.each([
    [jina, 'https://rr.example/jina/rerank'],
    [voyage, 'https://rr.example/jina/rerank'],
    [pinecone, 'https://rr.example/jina/rerank'],
  ])('%#', (adapter, url) => {
    const req = adapter.rerank!.request(full, {
      provider: adapter.slug,
      apiKey: 'k',
      customHost: 'https://rr.example/jina/',
      forwardHeaders: { 'X-Request-Source': 'tests', 'x-gateway-api-key': 'secret' },
    });
    expect(req.url).toBe(url);
    expect(req.headers['x-request-source']).toBe('tests');
    expect(req.headers['x-gateway-api-key']).toBeUndefined();
    expect(() => adapter.rerank!.request(full, { provider: adapter.slug })).toThrow(GatewayError);
  });
});
