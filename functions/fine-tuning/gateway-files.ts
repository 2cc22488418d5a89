/**
 * Fine-tuning jobs on files of the gateway's own Files API (docs/files.md): a
 * `training_file` / `validation_file` in the gateway's id shape is this workspace's file
 * (else 404 naming the field), of purpose `fine-tune` (else 400), whose lines are in the
 * format the method trains on (else 400 naming the first bad line). The provider gets its own
 * copy, uploaded to its Files API when the job is created; the job then names the provider's
 * file id at the provider and the gateway's to the caller. Any other id is the provider's
 * own file, as before.
 */
import { getFile } from '../files/bucket';
import { getFileRecord } from '../files/store';
import { FILE_ID, type FileRecord } from '../files/types';
import { badRequest, GatewayError, notFound, upstreamError } from '../shared/errors';
import { readBody } from '../shared/net/http-client';
import { connect, ProviderRejected, ProviderUnavailable, sendOk } from './providers/client';
import { str, obj } from './providers/shape';
import type { Method } from './types';
import { isObject } from '../shared/is-object';

/** The copy to a provider is made from memory: a file above this is refused (413) rather than held. */
export const MAX_HANDED_FILE_BYTES = 100 * 1024 * 1024;

type FileField = 'training_file' | 'validation_file';
const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

/** Why a chat example is not one, or undefined. */
function chatProblem(messages: unknown): string | undefined {
  if (!Array.isArray(messages) || messages.length === 0) return 'has no `messages` array';
  let answered = false;
  for (const [i, m] of messages.entries()) {
    if (!isObject(m) || typeof m.role !== 'string' || !ROLES.has(m.role)) return `has a message ${i} without a valid \`role\``;
    const toolCall = m.role === 'assistant' && (Array.isArray(m.tool_calls) || isObject(m.function_call));
    if (!toolCall && typeof m.content !== 'string' && !Array.isArray(m.content)) return `has a message ${i} without \`content\``;
    if (m.role === 'assistant') answered = true;
  }
  return answered ? undefined : 'has no assistant message to learn from';
}

function lineProblem(value: unknown, method: Method['type']): string | undefined {
  if (!isObject(value)) return 'is not a JSON object';
  if (method === 'supervised') return chatProblem(value.messages);
  if (!isObject(value.input)) return 'has no `input` object';
  const problem = chatProblem([...(Array.isArray(value.input.messages) ? value.input.messages : []), { role: 'assistant', content: '' }]);
  if (problem) return problem.replace('no `messages` array', 'no `input.messages`');
  if (!Array.isArray(value.preferred_output) || !Array.isArray(value.non_preferred_output)) return 'needs `preferred_output` and `non_preferred_output` arrays';
  return undefined;
}

/** The first line that is not a training example of `method`, as a 400 naming `field`. */
export function checkTrainingLines(bytes: Buffer, field: FileField, fileId: string, method: Method['type']): void {
  const text = bytes.toString('utf8');
  let examples = 0;
  let start = 0;
  for (let line = 1; start < text.length; line++) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const content = text.slice(start, end).trim();
    start = end + 1;
    if (content === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(content);
    } catch {
      value = Symbol('invalid');
    }
    const problem = typeof value === 'symbol' ? 'is not valid JSON' : lineProblem(value, method);
    if (problem) throw badRequest(`File ${fileId}: line ${line} ${problem}.`, field, `invalid_${field}`);
    examples++;
  }
  if (examples === 0) throw badRequest(`File ${fileId} holds no training examples.`, field, `invalid_${field}`);
}

async function gatewayFile(workspaceId: string, field: FileField, id: string): Promise<FileRecord> {
  const record = await getFileRecord(workspaceId, id);
  if (!record) throw notFound(`No such File object: ${id}`, field);
  if (record.purpose !== 'fine-tune') {
    throw badRequest(`File ${id} has purpose '${record.purpose}'; a fine-tuning job takes a file uploaded with purpose 'fine-tune'.`, field, 'invalid_value');
  }
  if (record.bytes > MAX_HANDED_FILE_BYTES) {
    throw new GatewayError(
      413,
      'invalid_request_error',
      `File ${id} holds more than ${MAX_HANDED_FILE_BYTES} bytes, the most the gateway hands to a provider.`,
      field,
      'file_too_large',
    );
  }
  return record;
}

/** Provider failures while copying, as answers to the caller (the job does not exist yet). */
function copyFailure(err: unknown, field: FileField): unknown {
  if (err instanceof ProviderRejected)
    return new GatewayError(err.status >= 500 ? 502 : 400, err.status >= 500 ? 'upstream_error' : 'invalid_request_error', err.message, field, err.code);
  if (err instanceof ProviderUnavailable) return upstreamError(err.message);
  return err;
}

/**
 * The provider's file ids for the job: the gateway files are all checked first, then each
 * is copied to the provider (its id in return); any other id passes unchanged.
 */
export async function handGatewayFiles(
  workspaceId: string,
  providerSlug: string,
  method: Method['type'],
  files: Record<FileField, string | null>,
): Promise<Record<FileField, string | null>> {
  const checked: Array<{ field: FileField; record: FileRecord; bytes: Buffer }> = [];
  for (const field of ['training_file', 'validation_file'] as const) {
    const id = files[field];
    if (!id || !FILE_ID.test(id)) continue;
    const record = await gatewayFile(workspaceId, field, id);
    const object = await getFile(record.object_key);
    if (!object) throw notFound(`No such File object: ${id}`, field);
    const bytes = await readBody(object.body, MAX_HANDED_FILE_BYTES);
    checkTrainingLines(bytes, field, id, method);
    checked.push({ field, record, bytes });
  }
  const handed: Record<FileField, string | null> = { ...files };
  for (const { field, record, bytes } of checked) {
    try {
      const provider = await connect(workspaceId, providerSlug);
      if (!provider.adapter.uploadFile) {
        throw badRequest(
          `${provider.adapter.name} cannot take a file of the gateway's Files API; upload the file to ${provider.adapter.name} and pass its id.`,
          field,
          'invalid_value',
        );
      }
      const uploaded = obj(await sendOk(provider.adapter.name, provider.adapter.uploadFile(provider.endpoint, { filename: record.filename, bytes })));
      const providerId = str(uploaded.id);
      if (!providerId) throw upstreamError(`${provider.adapter.name} accepted the file but returned no file id.`, 'invalid_provider_response');
      handed[field] = providerId;
    } catch (err) {
      throw copyFailure(err, field);
    }
  }
  return handed;
}
