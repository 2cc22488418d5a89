import type { Readable } from 'node:stream';
import { callerClosedRequest, GatewayError, upstreamError } from '../shared/errors';
import { AbortError, readBody } from '../shared/net/http-client';
import { log } from '../shared/telemetry/logger';
import type { ChatCompletion, ChatCompletionChunk, Embeddings, StreamTranslator } from '../providers/types';
import type { UpstreamOutcome } from './routing';
import { isObject } from '../shared/is-object';

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

/** What a translation threw and the two frames it threw from: enough to find the field it read. */
const whereItThrew = (err: unknown) => (err instanceof Error ? (err.stack ?? err.message).split('\n').slice(0, 3).join('\n') : String(err));

/**
 * A provider's parsed answer through its translation. A body that is JSON but not of the
 * shape the translation reads (a list where an object belongs, a block that is null) is the
 * provider's fault and is answered as one, 502 `invalid_upstream_response`, never as the
 * gateway's own 500; what the translation threw goes to the log.
 */
export function translateUpstream<T>(provider: string, translate: () => T): T {
  try {
    return translate();
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    log.warn('provider answer of an unexpected shape', { provider, error: whereItThrew(err) });
    throw upstreamError(`Provider '${provider}' returned a response of a shape the gateway cannot read.`, 'invalid_upstream_response');
  }
}

/**
 * A stream translator whose exceptions (an event of a shape it cannot read) end the stream
 * with the provider's error event, 502 `invalid_upstream_response`, as translateUpstream
 * answers such a body; GatewayErrors pass as they are.
 */
export function guardedTranslator(translator: StreamTranslator, provider: string): StreamTranslator {
  const guard = (step: () => ReturnType<StreamTranslator['push']>): ReturnType<StreamTranslator['push']> => {
    try {
      const out = step();
      for (const chunk of out.chunks) readableChunk(chunk);
      return out;
    } catch (err) {
      if (err instanceof GatewayError) throw err;
      log.warn('provider stream event of an unexpected shape', { provider, error: whereItThrew(err) });
      const message = `Provider '${provider}' sent a stream event of a shape the gateway cannot read.`;
      return { chunks: [], error: { status: 502, type: 'upstream_error', message, code: 'invalid_upstream_response' } };
    }
  };
  return { push: (bytes) => guard(() => translator.push(bytes)), end: () => guard(() => translator.end()), usage: () => translator.usage() };
}

/**
 * Whether a completion's choices (`part` 'message') or a chunk's (`part` 'delta') are what
 * the gateway and the other dialects' encoders read (an OpenAI answer is passed on as it
 * came): a list of choices, each with its message or delta, whose tool calls, if any, are a
 * list of calls with a function (in a chunk's later fragments the function may be absent).
 */
function readableChoices(value: unknown, part: 'message' | 'delta'): boolean {
  if (!isObject(value) || !Array.isArray(value.choices)) return false;
  return value.choices.every((choice: unknown) => {
    if (!isObject(choice) || !isObject(choice[part])) return false;
    const calls = choice[part].tool_calls;
    return calls == null || (Array.isArray(calls) && calls.every((t) => isObject(t) && (isObject(t.function) || (part === 'delta' && t.function == null))));
  });
}

/** A chat completion the encoders can read, or a TypeError for translateUpstream. */
export function readableCompletion(c: ChatCompletion): ChatCompletion {
  if (!readableChoices(c, 'message'))
    throw new TypeError('not a chat completion: choices[].message (and its tool_calls[].function) missing or of another type');
  return c;
}

/** A chunk the stream encoders can read, or a TypeError for guardedTranslator (OpenAI chunks are parsed as they came). */
function readableChunk(c: ChatCompletionChunk): void {
  if (!readableChoices(c, 'delta')) throw new TypeError('not a chat completion chunk: choices[].delta (and its tool_calls[]) missing or of another type');
}

/** What the gateway and the Gemini encoder read of an embeddings answer: a list of items, each with an embedding. */
export function readableEmbeddings(e: Embeddings): Embeddings {
  const ok = isObject(e) && Array.isArray(e.data) && e.data.every((d) => isObject(d) && (Array.isArray(d.embedding) || typeof d.embedding === 'string'));
  if (!ok) throw new TypeError('not an embeddings list: data[].embedding missing or of another type');
  return e;
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
