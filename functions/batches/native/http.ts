/**
 * Provider calls for the native batch adapters: built with the provider's own auth, signed
 * when the provider signs (Bedrock SigV4, Vertex token), sent through the gateway's one
 * outbound client (SSRF rules, timeouts), and failures sorted into ./errors.ts.
 */
import type { Readable } from 'node:stream';
import { GatewayError } from '../../shared/errors';
import { readBody, sendUpstream } from '../../shared/net/http-client';
import type { UpstreamRequest } from '../../providers/types';
import { NativeBatchRejected, NativeBatchUnavailable } from './errors';
import type { NativeBatchContext } from './types';

const TIMEOUT_MS = 60_000;
/** A control-plane answer (a job, a file object); results are streamed, never read whole. */
const MAX_JSON_BYTES = 10 * 1024 * 1024;

export interface ProviderResponse {
  status: number;
  body: unknown;
}

/** A request to the provider with its auth headers (and `content-type` when there is a body). */
export function providerRequest(
  ctx: NativeBatchContext,
  method: UpstreamRequest['method'],
  url: string,
  body?: { json: unknown } | { bytes: Buffer | string; contentType: string },
): UpstreamRequest {
  const { adapter, target } = ctx.provider;
  const headers: Record<string, string> = { accept: 'application/json', ...adapter.authHeaders(target) };
  let payload: Buffer | string | undefined;
  if (body && 'json' in body) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body.json);
  } else if (body) {
    headers['content-type'] = body.contentType;
    payload = body.bytes;
  }
  return { url, method, headers, body: payload };
}

/** The provider's error message and code from any of the usual error shapes. */
export function providerErrorOf(body: unknown): { message?: string; code?: string } {
  const root = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const inner = root.error && typeof root.error === 'object' ? (root.error as Record<string, unknown>) : root;
  const message = typeof inner.message === 'string' ? inner.message : typeof root.error === 'string' ? root.error : undefined;
  const code = typeof inner.code === 'string' ? inner.code : typeof inner.type === 'string' ? inner.type : undefined;
  return { message, code };
}

const transient = (status: number) => status === 408 || status === 429 || status >= 500;

/** Sends `req` (signed when the provider signs); resolves with the open response, throws NativeBatchUnavailable on transient failures. */
async function open(ctx: NativeBatchContext, name: string, req: UpstreamRequest) {
  const { adapter, target } = ctx.provider;
  try {
    const signed = adapter.sign ? await adapter.sign(req, target) : req;
    return await sendUpstream({ ...signed, signal: ctx.signal, timeoutMs: TIMEOUT_MS });
  } catch (err) {
    if (err instanceof GatewayError && err.status < 500 && err.status !== 408) {
      // A blocked or malformed host, a missing setting: trying again cannot help.
      throw new NativeBatchRejected(`${name}: ${err.message}`, err.code ?? 'invalid_provider_settings', err.status);
    }
    throw new NativeBatchUnavailable(`${name} could not be reached: ${(err as Error).message}`);
  }
}

function parsed(raw: Buffer): unknown {
  if (!raw.length) return undefined;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return raw.toString('utf8').slice(0, 500);
  }
}

function unavailable(name: string, res: ProviderResponse): NativeBatchUnavailable {
  const detail = providerErrorOf(res.body).message;
  return new NativeBatchUnavailable(`${name} answered HTTP ${res.status}${detail ? `: ${detail}` : ''}`);
}

/** A non-2xx answer as the permanent refusal it is, in the provider's words. */
export function rejection(name: string, res: ProviderResponse): NativeBatchRejected {
  const e = providerErrorOf(res.body);
  return new NativeBatchRejected(
    `${name} refused the request (HTTP ${res.status})${e.message ? `: ${e.message}` : ''}`,
    e.code ?? `provider_http_${res.status}`,
    res.status,
  );
}

/** One call; the answer (2xx or a permanent error status) with its JSON body. Transient failures throw NativeBatchUnavailable. */
export async function callProvider(ctx: NativeBatchContext, name: string, req: UpstreamRequest): Promise<ProviderResponse> {
  const res = await open(ctx, name, req);
  let raw: Buffer;
  try {
    raw = await readBody(res.body, MAX_JSON_BYTES);
  } catch (err) {
    throw new NativeBatchUnavailable(`${name}'s answer was cut short: ${(err as Error).message}`);
  }
  const answer = { status: res.status, body: parsed(raw) };
  if (transient(res.status)) throw unavailable(name, answer);
  return answer;
}

/** A call that must succeed: a non-2xx answer throws NativeBatchRejected. */
export async function callProviderOk(ctx: NativeBatchContext, name: string, req: UpstreamRequest): Promise<unknown> {
  const res = await callProvider(ctx, name, req);
  if (res.status >= 200 && res.status < 300) return res.body;
  throw rejection(name, res);
}

/** A 2xx response body as a stream (results files); the caller consumes or destroys it. */
export async function streamProvider(ctx: NativeBatchContext, name: string, req: UpstreamRequest): Promise<Readable> {
  const res = await open(ctx, name, req);
  if (res.status >= 200 && res.status < 300) return res.body;
  const answer = { status: res.status, body: parsed(await readBody(res.body, MAX_JSON_BYTES).catch(() => Buffer.alloc(0))) };
  throw transient(res.status) ? unavailable(name, answer) : rejection(name, answer);
}

/** The JSON values of a JSON Lines stream, one a line (blank lines skipped); a line that is not JSON is yielded as `undefined`. */
export async function* jsonLines(body: Readable): AsyncGenerator<unknown> {
  let pending = '';
  const emit = function* (text: string) {
    if (text.trim() === '') return;
    try {
      yield JSON.parse(text) as unknown;
    } catch {
      yield undefined;
    }
  };
  try {
    for await (const piece of body as AsyncIterable<Buffer | string>) {
      pending += typeof piece === 'string' ? piece : piece.toString('utf8');
      let nl = pending.indexOf('\n');
      while (nl !== -1) {
        yield* emit(pending.slice(0, nl));
        pending = pending.slice(nl + 1);
        nl = pending.indexOf('\n');
      }
    }
    yield* emit(pending);
  } finally {
    body.destroy();
  }
}
