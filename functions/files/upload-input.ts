/**
 * Request bodies of the Uploads API: `POST /v1/uploads` and `.../complete` (JSON, zod/mini,
 * a 400 names the field) and `.../parts` (a multipart form whose `data` is the part).
 */
import { badRequest, GatewayError } from '../shared/errors';
import { parseInput, z } from '../shared/validation';
import { FILE_PURPOSES, MAX_BATCH_FILE_BYTES, MAX_EXPIRY_SECONDS, MAX_FILE_BYTES, MIN_EXPIRY_SECONDS, type FilePurpose } from './types';

/**
 * What one part's `data` may hold: API Gateway's 10 MiB request cap less 16 KiB for the
 * form's framing (boundaries, headers, the filename), so a full part always gets through.
 */
export const MAX_PART_BYTES = 10 * 1024 * 1024 - 16 * 1024;
/** S3's cap on the parts of one multipart upload; far above what 512 MB needs. */
export const MAX_PARTS = 10_000;

export const createUploadSchema = z.strictObject({
  filename: z.string().check(z.minLength(1), z.maxLength(512)),
  purpose: z.enum(FILE_PURPOSES),
  bytes: z.int().check(z.gte(1)),
  mime_type: z.string().check(z.minLength(1), z.maxLength(255)),
  expires_after: z.optional(
    z.strictObject({
      anchor: z.literal('created_at'),
      seconds: z.int().check(z.gte(MIN_EXPIRY_SECONDS), z.lte(MAX_EXPIRY_SECONDS)),
    }),
  ),
});

export const completeUploadSchema = z.strictObject({
  part_ids: z.array(z.string().check(z.minLength(1), z.maxLength(64))).check(z.minLength(1), z.maxLength(MAX_PARTS)),
  md5: z.optional(z.string().check(z.regex(/^[0-9a-fA-F]{32}$/, 'expected 32 hexadecimal digits'))),
});

export interface CreateUploadInput {
  filename: string;
  purpose: FilePurpose;
  bytes: number;
  mime_type: string;
  expiresAfterSeconds?: number;
}

const tooLarge = (message: string) => new GatewayError(413, 'invalid_request_error', message, 'bytes', 'file_too_large');

export function parseCreateUpload(body: unknown): CreateUploadInput {
  const b = parseInput(createUploadSchema, body);
  if (b.bytes > MAX_FILE_BYTES) throw tooLarge(`A file may hold at most ${MAX_FILE_BYTES} bytes.`);
  if (b.purpose === 'batch' && b.bytes > MAX_BATCH_FILE_BYTES) throw tooLarge(`A batch input file may hold at most ${MAX_BATCH_FILE_BYTES} bytes.`);
  return { filename: b.filename, purpose: b.purpose, bytes: b.bytes, mime_type: b.mime_type, expiresAfterSeconds: b.expires_after?.seconds };
}

export function parseCompleteUpload(body: unknown): { partIds: string[]; md5?: string } {
  const b = parseInput(completeUploadSchema, body);
  const seen = new Set<string>();
  for (const id of b.part_ids) {
    if (seen.has(id)) throw badRequest(`\`part_ids\` names the part ${id} twice.`, 'part_ids', 'invalid_value');
    seen.add(id);
  }
  return { partIds: b.part_ids, md5: b.md5?.toLowerCase() };
}

/** The `data` field of a parts request: a file part, not empty, within the per-part cap. */
export async function parsePartData(contentType: string | undefined, body: Buffer): Promise<Uint8Array> {
  if (!contentType?.toLowerCase().startsWith('multipart/form-data')) {
    throw badRequest('POST /v1/uploads/{upload_id}/parts takes a multipart/form-data body with the field `data`.', 'data', 'invalid_content_type');
  }
  let form: FormData;
  try {
    form = await new Response(body, { headers: { 'content-type': contentType } }).formData();
  } catch {
    throw badRequest('The multipart/form-data body could not be parsed.', 'data', 'invalid_multipart');
  }
  const data = form.get('data');
  if (data === null) throw badRequest('Missing required parameter: `data`.', 'data', 'missing_required_parameter');
  const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : new Uint8Array(await data.arrayBuffer());
  if (bytes.byteLength === 0) throw badRequest('`data` is empty.', 'data', 'invalid_value');
  if (bytes.byteLength > MAX_PART_BYTES) {
    throw new GatewayError(413, 'invalid_request_error', `A part's \`data\` may hold at most ${MAX_PART_BYTES} bytes.`, 'data', 'part_too_large');
  }
  return bytes;
}
