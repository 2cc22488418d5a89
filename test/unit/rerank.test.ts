import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../functions/shared/errors';
import { azureAI, azureAIModel, azureAIRerankUrl } from '../../functions/providers/azure-ai';
import { bedrockRerank } from '../../functions/providers/bedrock/rerank';
import { cohere } from '../../functions/providers/cohere';
import { getAdapter } from '../../functions/providers/registry';
import type { RerankRequest, RerankResult } from '../../functions/providers/types';
import { finaliseRerank } from '../../functions/rerank/normalise';
import { parseEffectiveBody, parseRerankBody } from '../../functions/rerank/schema';
import { spanFields } from '../../functions/rerank/tracing';

const ctx = { model: 'm', id: 'rerank-gw-1', created: 1_700_000_000, includeUsage: false };
const documents: RerankRequest['documents'] = ['alpha doc', { text: 'beta doc', source: 'wiki' }, 'gamma doc'];
const full: RerankRequest = {
  model: 'cohere.rerank-v3.5',
  query: 'q',
  documents,
  top_n: 2,
  return_documents: true,
  max_tokens_per_doc: 256,
  priority: 3,
  rank_fields: ['text'],
  truncation: true,
  parameters: { x: 1 },
};
const sent = (req: { body?: unknown }) => JSON.parse(req.body as string);

function thrown(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected a GatewayError');
}

describe('azure-ai adapter', () => {
  it('is registered under its slug', async () => {
    expect(await getAdapter('azure-ai')).toBe(azureAI);
  });

  it('defaults to the Foundry resource host, Cohere v2 path, Bearer key', () => {
    const req = azureAI.rerank!.request(full, { provider: 'azure-ai', apiKey: ' az-key ', azure: { resourceName: 'My-Res' } });
    expect(req.url).toBe('https://my-res.services.ai.azure.com/providers/cohere/v2/rerank');
    expect(req.headers).toEqual({ 'content-type': 'application/json', authorization: 'Bearer az-key' });
    expect(azureAI.baseUrl({ provider: 'azure-ai', azure: { resourceName: 'res' } })).toBe('https://res.services.ai.azure.com');
  });

  it('appends /v2/rerank to a custom host, without a trailing version segment', () => {
    for (const [host, url] of [
      ['https://rr-1.eastus2.models.ai.azure.com', 'https://rr-1.eastus2.models.ai.azure.com/v2/rerank'],
      ['https://rr-1.eastus2.models.ai.azure.com/v1/', 'https://rr-1.eastus2.models.ai.azure.com/v2/rerank'],
      ['https://res.services.ai.azure.com/providers/cohere/v2', 'https://res.services.ai.azure.com/providers/cohere/v2/rerank'],
    ]) {
      expect(azureAIRerankUrl({ provider: 'azure-ai', customHost: host })).toBe(url);
    }
  });

  it('strips the `cohere.` prefix and sends only Cohere v2 fields', () => {
    expect(azureAIModel('cohere.rerank-v3.5')).toBe('rerank-v3.5');
    expect(azureAIModel('Cohere.rerank-v4.0-pro')).toBe('rerank-v4.0-pro');
    expect(azureAIModel('Cohere-rerank-v4.0-fast')).toBe('Cohere-rerank-v4.0-fast');
    expect(azureAIModel('my.cohere.model')).toBe('my.cohere.model');
    const req = azureAI.rerank!.request(full, { provider: 'azure-ai', apiKey: 'k', customHost: 'https://h.example' });
    expect(sent(req)).toEqual({
      model: 'rerank-v3.5',
      query: 'q',
      documents: ['alpha doc', 'beta doc', 'gamma doc'],
      top_n: 2,
      max_tokens_per_doc: 256,
      priority: 3,
    });
  });

  it('400s naming what is missing or unsafe', () => {
    expect(thrown(() => azureAI.rerank!.request(full, { provider: 'azure-ai', apiKey: 'k' })).param).toBe('x-gateway-azure-resource-name');
    expect(thrown(() => azureAI.rerank!.request(full, { provider: 'azure-ai', apiKey: 'k', azure: { resourceName: 'evil.com/x' } })).param).toBe(
      'x-gateway-azure-resource-name',
    );
    expect(thrown(() => azureAI.rerank!.request(full, { provider: 'azure-ai', customHost: 'https://h.example' })).code).toBe('missing_provider_key');
  });

  it('maps the Cohere answer: provider id, billed search units, documents from the request', () => {
    const upstream = {
      id: 'az-1',
      results: [
        { index: 2, relevance_score: 0.2 },
        { index: 1, relevance_score: 0.8 },
      ],
      meta: { billed_units: { search_units: 4 } },
    };
    expect(azureAI.rerank!.response(upstream, full, ctx)).toEqual({
      object: 'list',
      id: 'az-1',
      results: [
        { index: 1, relevance_score: 0.8, document: { text: 'beta doc' } },
        { index: 2, relevance_score: 0.2, document: { text: 'gamma doc' } },
      ],
      model: 'cohere.rerank-v3.5',
      usage: { search_units: 4 },
      provider: 'azure-ai',
    });
  });
});

describe('cohere and bedrock rerank field rules', () => {
  it('cohere keeps the model as given and drops return_documents, rank_fields, truncation, parameters', () => {
    const req = cohere.rerank!.request(full, { provider: 'cohere', apiKey: 'k' });
    expect(req.url).toBe('https://api.cohere.com/v2/rerank');
    expect(sent(req)).toEqual({
      model: 'cohere.rerank-v3.5',
      query: 'q',
      documents: ['alpha doc', 'beta doc', 'gamma doc'],
      top_n: 2,
      max_tokens_per_doc: 256,
      priority: 3,
    });
  });

  it('bedrock: ARN from a bare id, numberOfResults, parameters as additionalModelRequestFields, computed search units', () => {
    const req = bedrockRerank.request(
      { ...full, model: 'amazon.rerank-v1:0' },
      { provider: 'bedrock', aws: { accessKeyId: 'a', secretAccessKey: 's', region: 'us-west-2' } },
    );
    expect(req.url).toBe('https://bedrock-agent-runtime.us-west-2.amazonaws.com/rerank');
    expect(sent(req).rerankingConfiguration).toEqual({
      type: 'BEDROCK_RERANKING_MODEL',
      bedrockRerankingConfiguration: {
        modelConfiguration: { modelArn: 'arn:aws:bedrock:us-west-2::foundation-model/amazon.rerank-v1:0', additionalModelRequestFields: { x: 1 } },
        numberOfResults: 2,
      },
    });
    const out = bedrockRerank.response(
      {
        results: [
          { index: 0, relevanceScore: 0.1 },
          { index: 2, relevanceScore: 0.7 },
        ],
      },
      full,
      ctx,
    );
    expect(out).toMatchObject({ id: 'rerank-gw-1', usage: { search_units: 1 }, provider: 'bedrock' });
    expect(out.results.map((r) => r.index)).toEqual([2, 0]);
  });
});

describe('finaliseRerank', () => {
  const raw = (results: unknown[], extra: Partial<RerankResult> = {}): RerankResult =>
    ({ object: 'list', id: '', results, model: 'x', usage: { search_units: 1 }, provider: 'x', ...extra }) as RerankResult;

  it('sorts by score (ties by index), keeps top_n, drops results that point nowhere or have no score', () => {
    const out = finaliseRerank(
      raw([
        { index: 0, relevance_score: 0.2 },
        { index: 2, relevance_score: 0.5 },
        { index: 1, relevance_score: 0.5 },
        { index: 3, relevance_score: 0.9 },
        { index: -1, relevance_score: 0.9 },
        { index: 0.5, relevance_score: 0.9 },
        { index: 1, relevance_score: 'high' },
      ]),
      { ...full, top_n: 2, return_documents: false },
      { provider: 'cohere', id: 'gen-1' },
    );
    expect(out).toEqual({
      object: 'list',
      results: [
        { index: 1, relevance_score: 0.5 },
        { index: 2, relevance_score: 0.5 },
      ],
      model: 'cohere.rerank-v3.5',
      id: 'gen-1',
      usage: { search_units: 1 },
      provider: 'cohere',
    });
  });

  it('documents only when asked, from the provider or else the request', () => {
    const results = [
      { index: 0, relevance_score: 0.9, document: { text: 'as echoed' } },
      { index: 1, relevance_score: 0.1 },
    ];
    const asked = finaliseRerank(raw(results), { ...full, top_n: undefined }, { provider: 'jina', id: 'g' });
    expect(asked.results).toEqual([
      { index: 0, relevance_score: 0.9, document: { text: 'as echoed' } },
      { index: 1, relevance_score: 0.1, document: { text: 'beta doc' } },
    ]);
    for (const return_documents of [false, undefined]) {
      const out = finaliseRerank(raw(results), { ...full, return_documents }, { provider: 'jina', id: 'g' });
      expect(out.results.every((r) => !('document' in r))).toBe(true);
    }
  });

  it('search units are a non-negative integer, computed when unusable; the provider id wins', () => {
    const many = { ...full, documents: Array.from({ length: 201 }, (_, i) => `d${i}`) };
    expect(finaliseRerank(raw([], { usage: { search_units: 2.2 } }), full, { provider: 'p', id: 'g' }).usage).toEqual({ search_units: 3 });
    expect(finaliseRerank(raw([], { usage: { search_units: Number.NaN } }), many, { provider: 'p', id: 'g' }).usage).toEqual({ search_units: 3 });
    expect(finaliseRerank(raw([], { usage: { search_units: -1 } }), full, { provider: 'p', id: 'g' }).usage).toEqual({ search_units: 1 });
    expect(finaliseRerank(raw([], { id: 'prov-1' }), full, { provider: 'p', id: 'g' }).id).toBe('prov-1');
  });
});

describe('request body validation', () => {
  it('accepts the body, treats nulls as absent', () => {
    expect(parseRerankBody({ ...full, priority: null })).toEqual({ ...full, priority: undefined });
    expect(parseRerankBody({ model: 'm', query: 'q', documents: [{ text: 't', any: { nested: true } }] }).documents).toEqual([
      { text: 't', any: { nested: true } },
    ]);
  });

  it.each([
    [{ ...full, documents: [] }, 'documents'],
    [{ ...full, top_n: 0 }, 'top_n'],
    [{ ...full, max_tokens_per_doc: 0 }, 'max_tokens_per_doc'],
    [{ ...full, documents: [{ text: 1 }] }, 'documents[0]'],
    [{ ...full, extra: true }, 'extra'],
  ])('%j -> 400 on %s', (body, param) => {
    expect(thrown(() => parseRerankBody(body)).param).toBe(param);
  });

  it('config overrides: unknown keys dropped, known ones held to the same rules', () => {
    expect(parseEffectiveBody({ ...full, temperature: 0.2 })).toEqual(full);
    expect(thrown(() => parseEffectiveBody({ ...full, top_n: 0 })).param).toBe('override_params.top_n');
  });
});

describe('span headers', () => {
  it('become log fields; absent or blank ones are left out', () => {
    expect(spanFields({ 'x-gateway-span-id': 's-1', 'x-gateway-parent-span-id': 'p:0', 'x-gateway-span-name': 'search rerank' })).toEqual({
      span_id: 's-1',
      parent_span_id: 'p:0',
      span_name: 'search rerank',
    });
    expect(spanFields({ 'x-gateway-span-id': '  ' })).toEqual({});
  });

  it('a malformed one is a 400 naming the header', () => {
    expect(thrown(() => spanFields({ 'x-gateway-span-id': 'a b' })).param).toBe('x-gateway-span-id');
    expect(thrown(() => spanFields({ 'x-gateway-span-name': 'line\nbreak' })).param).toBe('x-gateway-span-name');
  });
});
