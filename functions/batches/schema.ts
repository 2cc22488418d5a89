/** `POST /v1/batches`, validated with zod/mini: a 400 names the field and the rule. */
import { z } from '../shared/validation';
import { BATCH_ENDPOINTS } from './types';

/** OpenAI metadata: 16 pairs, keys up to 64 characters, values up to 512. */
const metadataSchema = z
  .record(z.string().check(z.minLength(1), z.maxLength(64)), z.string().check(z.maxLength(512)))
  .check(z.refine((m) => Object.keys(m).length <= 16, 'expected at most 16 key-value pairs'));

export const createBatchSchema = z.strictObject({
  input_file_id: z.string().check(z.minLength(1), z.maxLength(512)),
  endpoint: z.enum(BATCH_ENDPOINTS),
  completion_window: z.literal('24h'),
  metadata: z.optional(z.nullable(metadataSchema)),
  /** OpenAI's `output_expires_after`: accepted, output files are kept 30 days. */
  output_expires_after: z.optional(z.looseObject({})),
});
