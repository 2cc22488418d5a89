import type { Readable } from 'node:stream';
import { callerClosedRequest, GatewayError, upstreamError } from '../shared/errors';
import { AbortError, readBody } from '../shared/net/http-client';
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

/**
 * For a body relayed as it arrives: wait for its first bytes (or its end), so that a body
 * failing before any (deadline, cut) can still be answered with its own status and error
 * instead of a 200 that then breaks. Resolves with that GatewayError, or undefined once
 * bytes are in; the caller leaving is thrown (499, for the request log).
 */
export function failureBeforeFirstBytes(body: Readable): Promise<GatewayError | undefined> {
  return firstBytes(body).then(
    () => undefined,
    (err: unknown) => {
      if (err instanceof GatewayError) return err;
      throw err instanceof AbortError ? callerClosedRequest() : err;
    },
  );
}

/** Resolves once `body` has bytes buffered or has ended; rejects with the error it fails with first. */
function firstBytes(body: Readable): Promise<void> {
  if (body.readableLength > 0 || body.readableEnded) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const done = (err?: unknown) => {
      body.off('readable', onReadable);
      body.off('error', done);
      body.off('close', onClose);
      if (err) reject(err);
      else resolve();
    };
    const onReadable = () => done();
    const onClose = () => done(upstreamError('The upstream response ended before it was complete.', 'upstream_response_ended'));
    body.on('readable', onReadable);
    body.once('error', done);
    body.once('close', onClose);
  });
}
