/**
 * The rerank request body of docs/api.md with the limits of, validated with zod/mini:
 * a 400 names the failing field. Top-level `null` values count as absent (SDKs send
 * `None`/`null` for unset options). Unknown fields are a 400: provider-specific options go
 * in `parameters`, never alongside the unified fields.
 */
import { parseInput, z } from '../shared/validation';
import type { RerankRequest } from '../providers/types';

/** A document object: `text` plus any metadata (Pinecone ranks on `rank_fields` of it). */
const documentObject = z.looseObject({ text: z.string() });

const fields = {
  model: z.string().check(z.minLength(1), z.maxLength(2048)),
  query: z.string().check(z.minLength(1)),
  documents: z.array(z.union([z.string(), documentObject])).check(z.minLength(1)),
  top_n: z.optional(z.int().check(z.gte(1))),
  return_documents: z.optional(z.boolean()),
  max_tokens_per_doc: z.optional(z.int().check(z.gte(1))),
  priority: z.optional(z.number()),
  rank_fields: z.optional(z.array(z.string().check(z.minLength(1))).check(z.minLength(1))),
  truncation: z.optional(z.boolean()),
  parameters: z.optional(z.record(z.string(), z.unknown())),
};

/** What a caller may send. */
export const rerankBodySchema = z.strictObject(fields);
/** The body after a config's `override_params`: same rules, keys no rerank provider knows are dropped. */
const effectiveBodySchema = z.object(fields);

function withoutNulls(input: unknown): unknown {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return input;
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== null));
}

export const parseRerankBody = (input: unknown): RerankRequest => parseInput(rerankBodySchema, withoutNulls(input)) as RerankRequest;

/** Re-check a body a config changed (its `override_params` may set any field). */
export const parseEffectiveBody = (input: unknown): RerankRequest => parseInput(effectiveBodySchema, withoutNulls(input), 'override_params') as RerankRequest;
