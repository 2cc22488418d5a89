/**
 * Bedrock Rerank: POST https://bedrock-agent-runtime.{region}.amazonaws.com/rerank,
 * SigV4 service `bedrock`. `top_n` -> numberOfResults; a bare model id becomes the
 * foundation-model ARN of the region. Bedrock reports no usage: search_units = ceil(docs/100).
 * Sent: query, documents (INLINE TEXT sources; objects as their `text`), top_n, and
 * `parameters` as `additionalModelRequestFields`. Dropped (Bedrock Rerank has no such field):
 * return_documents (documents are filled from the request), max_tokens_per_doc, priority,
 * rank_fields, truncation.
 */
import { badRequest } from '../../shared/errors';
import { awsRegion } from '../_shared/aws-sigv4';
import { agentRuntimeRoot, bedrockPost, validModelId } from './common';
import type { RerankAdapter, RerankRequest } from '../types';

const MAX_DOCUMENTS = 1000;

function documentText(doc: RerankRequest['documents'][number] | undefined, index: number): string {
  const text = typeof doc === 'string' ? doc : doc?.text;
  if (typeof text !== 'string') throw badRequest(`documents[${index}] must be a string or an object with \`text\`.`, `documents[${index}]`, 'invalid_document');
  return text;
}

export function rerankModelArn(model: string, region: string): string {
  const id = validModelId(model);
  return id.startsWith('arn:') ? id : `arn:aws:bedrock:${region}::foundation-model/${id}`;
}

interface BedrockRerankResponse {
  results?: Array<{ index: number; relevanceScore: number }>;
}

export const bedrockRerank: RerankAdapter = {
  request(body, target) {
    const docs = body.documents;
    if (!Array.isArray(docs) || docs.length === 0 || docs.length > MAX_DOCUMENTS) {
      throw badRequest(`documents must hold 1 to ${MAX_DOCUMENTS} items for Bedrock rerank.`, 'documents', 'invalid_documents');
    }
    const region = awsRegion(target);
    const sources = docs.map((doc, i) => ({
      type: 'INLINE',
      inlineDocumentSource: { type: 'TEXT', textDocument: { text: documentText(doc, i) } },
    }));
    const payload = {
      queries: [{ type: 'TEXT', textQuery: { text: body.query } }],
      sources,
      rerankingConfiguration: {
        type: 'BEDROCK_RERANKING_MODEL',
        bedrockRerankingConfiguration: {
          modelConfiguration: {
            modelArn: rerankModelArn(body.model, region),
            ...(body.parameters ? { additionalModelRequestFields: body.parameters } : {}),
          },
          numberOfResults: Math.min(body.top_n ?? docs.length, docs.length),
        },
      },
    };
    return bedrockPost(`${agentRuntimeRoot(target)}/rerank`, payload, target);
  },
  response(upstream, body, ctx) {
    const results = (((upstream ?? {}) as BedrockRerankResponse).results ?? [])
      .map((r) => ({
        index: r.index,
        relevance_score: r.relevanceScore,
        ...(body.return_documents ? { document: { text: documentText(body.documents[r.index], r.index) } } : {}),
      }))
      .sort((a, b) => b.relevance_score - a.relevance_score);
    return {
      object: 'list',
      id: ctx.id,
      results,
      model: body.model,
      usage: { search_units: Math.ceil(body.documents.length / 100) },
      provider: 'bedrock',
    };
  },
};
