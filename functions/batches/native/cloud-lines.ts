/**
 * What the Bedrock and Vertex AI batch adapters share: a translator's 400 as a prepared
 * line's error, a provider's per-record error as an OpenAI error answer, and the context
 * the live path's response translators take.
 */
import { newId } from '../../shared/ids';
import { GatewayError } from '../../shared/errors';
import type { TranslateContext } from '../../providers/types';
import type { NativeLineResult, PreparedLine } from './types';

/** Runs a pure translation; a GatewayError (a field the provider cannot take) becomes the line's error, naming it. */
export function prepared(line: number, model: string, translate: () => Record<string, unknown>): PreparedLine {
  try {
    return { ok: true, model, payload: translate() };
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    const where = err.param ? ` (${err.param})` : '';
    return { ok: false, code: err.code ?? 'invalid_request', message: `Line ${line}${where}: ${err.message}` };
  }
}

const TYPE_OF: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  408: 'timeout_error',
  429: 'rate_limit_error',
};

/** A record the provider answered with an error: its status and an OpenAI error body. */
export function errorAnswer(line: number, status: number, message: string, code: string): NativeLineResult {
  const type = TYPE_OF[status] ?? (status >= 500 ? 'upstream_error' : 'invalid_request_error');
  return { line, response: { status_code: status, request_id: null, body: { error: { message, type, param: null, code } } }, error: null };
}

/** A successful answer body, its usage kept for spend. */
export function okAnswer(line: number, body: Record<string, unknown>, model: string): NativeLineResult {
  const usage = body.usage as NativeLineResult['usage'] | undefined;
  return { line, response: { status_code: 200, request_id: null, body }, error: null, model, ...(usage ? { usage } : {}) };
}

/** The translators' context for one result line (ids for answers that carry none). */
export const translateContext = (model: string, idPrefix: string): TranslateContext => ({
  model,
  id: newId(idPrefix),
  created: Math.floor(Date.now() / 1000),
  includeUsage: false,
});
