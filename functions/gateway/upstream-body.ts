import { upstreamError } from '../shared/errors';
import { readBody } from '../shared/net/http-client';
import type { UpstreamOutcome } from './routing';

/** Largest non-streamed provider body the gateway will buffer for translation. */
export const MAX_TRANSLATED_BODY = 20 * 1024 * 1024;

/**
 * Buffer and parse a provider's JSON body (bounded; decoded bytes count). Every failure is
 * a GatewayError: the limit (502 `upstream_response_too_large`), a cut (502
 * `upstream_response_ended`), the deadline (408), an encoding the client could not decode
 * or a body that is not JSON (502 `invalid_upstream_response`); the caller leaving is an
 * AbortError.
 */
export async function readJsonBody(outcome: UpstreamOutcome, provider: string): Promise<{ bytes: Buffer; json: unknown }> {
  const encoding = outcome.headers['content-encoding'];
  if (encoding !== undefined && String(encoding).toLowerCase() !== 'identity') {
    outcome.body.destroy();
    throw upstreamError(
      `Provider '${provider}' answered with content-encoding '${String(encoding)}', which the gateway cannot decode.`,
      'invalid_upstream_response',
    );
  }
  const body = await readBody(outcome.body, MAX_TRANSLATED_BODY);
  try {
    return { bytes: body, json: JSON.parse(body.toString('utf8')) };
  } catch {
    throw upstreamError(`Provider '${provider}' returned a body that is not valid JSON.`, 'invalid_upstream_response');
  }
}
