import { createHash, randomUUID } from 'node:crypto';
import { finished, Readable, Transform } from 'node:stream';
import { gunzipSync, gzipSync } from 'node:zlib';
import { badRequest, GatewayError, NO_RETRY_HEADERS } from '../errors';
import {
  claimKey,
  isLive,
  releaseKey,
  renewLease,
  storeAnswer,
  type IdempotencyItem,
  type IdempotencyScope,
  type StoredAnswer,
  type StoredError,
} from '../stores/idempotency';
import { config } from '../config';
import { afterResponse, outliveCaller } from '../telemetry/context';
import { log } from '../telemetry/logger';
import type { GatewayRequest, HttpResponse } from './types';

export const REPLAY_HEADER = 'x-gateway-idempotent-replay';
const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;

/** Stored as sent up to this size; larger bodies are gzip-compressed. */
const RAW_BODY_BYTES = 64 * 1024;
/** What an item may hold of a body (DynamoDB items end at 400 KB). */
export const MAX_STORED_BODY_BYTES = 350 * 1024;
/** Bodies over this are not compressed (nor replayed): compressing them would stall the process. */
const MAX_COMPRESSED_INPUT_BYTES = 8 * 1024 * 1024;

/** Answers a retry may turn into a success: the key is released, not stored. */
const RETRYABLE_STATUSES = new Set([408, 409, 425, 429]);
const isRetryable = (status: number) => status >= 500 || RETRYABLE_STATUSES.has(status);

/** Headers that describe the moment of the first answer, not the answer: not replayed. */
const MOMENT_HEADER = /^(x-ratelimit-|x-budget-|retry-after|x-should-retry$|content-length$|transfer-encoding$|connection$|date$|set-cookie$)/;

/** The `idempotency` middleware's work for a request that carries `Idempotency-Key` (loaded on its first use). */
export async function runIdempotent(req: GatewayRequest, idempotencyKey: string, next: () => Promise<HttpResponse>): Promise<HttpResponse> {
  if (!KEY_PATTERN.test(idempotencyKey)) {
    throw badRequest('Invalid `Idempotency-Key`: expected 1 to 255 printable ASCII characters.', 'Idempotency-Key', 'invalid_idempotency_key');
  }
  const scope: IdempotencyScope = { workspaceId: req.auth.workspaceId, keyId: req.auth.keyId };
  const fingerprint = fingerprintOf(req);
  const leaseId = randomUUID();
  for (let attempt = 0; ; attempt++) {
    const claim = await claimKey(scope, idempotencyKey, fingerprint, leaseId);
    if (claim.claimed) break;
    const existing = claim.existing;
    // Gone or lapsed between the claim and the read: claim again (a few times, then report it in use).
    if ((!existing || !isLive(existing)) && attempt < 3) continue;
    return answerFromExisting(existing, fingerprint);
  }
  // The answer is kept for the retry: a caller that leaves (an SDK's own timeout) must not
  // abort the call its retry will be answered with.
  outliveCaller(req.context);
  return runClaimed(req, next, new Lease(req, scope, idempotencyKey, leaseId));
}

function fingerprintOf(req: GatewayRequest): string {
  return createHash('sha256').update(`${req.method}\n${req.path}\n${req.rawQuery}\n`).update(req.body).digest('base64');
}

function answerFromExisting(existing: IdempotencyItem | undefined, fingerprint: string): HttpResponse {
  if (existing && existing.fingerprint !== fingerprint) {
    throw new GatewayError(
      422,
      'invalid_request_error',
      'This Idempotency-Key was already used with another request (method, path, query or body). Use a new key for a new request.',
      'Idempotency-Key',
      'idempotency_key_reused',
    );
  }
  if (!existing || existing.state === 'in_flight' || !existing.answer) {
    throw new GatewayError(
      409,
      'conflict_error',
      'A request with this Idempotency-Key is still running. Retry shortly to get its answer.',
      'Idempotency-Key',
      'idempotency_key_in_use',
      { 'x-should-retry': 'true', 'retry-after': '1' },
    );
  }
  return replay(existing.answer);
}

function replay(answer: StoredAnswer): HttpResponse {
  const headers = { ...answer.headers, [REPLAY_HEADER]: 'true' };
  if (!answer.replayable) {
    throw new GatewayError(
      409,
      'conflict_error',
      `The first answer to this Idempotency-Key (status ${answer.status}) was too large to store, so it cannot be replayed. The request ran once; use a new key to run it again.`,
      'Idempotency-Key',
      'idempotency_replay_unavailable',
      { ...NO_RETRY_HEADERS, [REPLAY_HEADER]: 'true' },
    );
  }
  if (answer.error) {
    const e = JSON.parse(answer.error) as StoredError;
    throw new GatewayError(answer.status, e.type as GatewayError['type'], e.message, e.param, e.code, headers, e.extra);
  }
  const stored = answer.body ? Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength) : Buffer.alloc(0);
  return { statusCode: answer.status, headers, body: answer.encoding === 'gzip' ? gunzipSync(stored) : stored };
}

/** The claim a running request holds: renewed every third of the lease until it ends. */
class Lease {
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly req: GatewayRequest,
    private readonly scope: IdempotencyScope,
    private readonly idempotencyKey: string,
    private readonly leaseId: string,
  ) {
    this.timer = setInterval(
      () => {
        renewLease(scope, idempotencyKey, leaseId).then(
          (held) => held || log.warn('idempotency lease lost while the request ran', { idempotency_key: idempotencyKey }, req.context),
          (err: unknown) => log.warn('idempotency lease renewal failed', { error: String(err) }, req.context),
        );
      },
      Math.max(100, Math.floor(config().idempotencyLeaseMs / 3)),
    );
    this.timer.unref();
  }

  async store(answer: StoredAnswer): Promise<void> {
    clearInterval(this.timer);
    try {
      const stored = await storeAnswer(this.scope, this.idempotencyKey, this.leaseId, answer);
      if (!stored) log.warn('idempotency answer not stored: the claim had lapsed', { idempotency_key: this.idempotencyKey }, this.req.context);
    } catch (err) {
      log.error('idempotency answer could not be stored', { error: String(err) }, this.req.context);
    }
  }

  async release(): Promise<void> {
    clearInterval(this.timer);
    try {
      await releaseKey(this.scope, this.idempotencyKey, this.leaseId);
    } catch (err) {
      // The claim lapses on its own after the lease.
      log.warn('idempotency key could not be released', { error: String(err) }, this.req.context);
    }
  }
}

async function runClaimed(req: GatewayRequest, next: () => Promise<HttpResponse>, lease: Lease): Promise<HttpResponse> {
  let res: HttpResponse;
  try {
    res = await next();
  } catch (err) {
    if (err instanceof GatewayError && !isRetryable(err.status)) await lease.store(errorAnswer(err));
    else await lease.release();
    throw err;
  }
  if (isRetryable(res.statusCode)) {
    await lease.release();
    return res;
  }
  if (res.body instanceof Readable) return recordStream(req, res, res.body, lease);
  const body = res.body === undefined ? Buffer.alloc(0) : Buffer.isBuffer(res.body) ? res.body : Buffer.from(res.body);
  await lease.store(answerOf(res, body));
  return res;
}

function errorAnswer(err: GatewayError): StoredAnswer {
  const error: StoredError = {
    type: err.type,
    message: err.message,
    param: err.param,
    code: err.code,
    ...(Object.keys(err.extra).length ? { extra: err.extra } : {}),
  };
  return { status: err.status, headers: replayedHeaders(err.headers), error: JSON.stringify(error), replayable: true };
}

function answerOf(res: HttpResponse, body: Buffer | undefined): StoredAnswer {
  const answer: StoredAnswer = { status: res.statusCode, headers: replayedHeaders(res.headers), replayable: false };
  if (!body || body.length > MAX_COMPRESSED_INPUT_BYTES) return answer;
  if (body.length === 0) return { ...answer, replayable: true };
  if (body.length <= RAW_BODY_BYTES) return { ...answer, body, replayable: true };
  const compressed = gzipSync(body);
  return compressed.length <= MAX_STORED_BODY_BYTES ? { ...answer, body: compressed, encoding: 'gzip', replayable: true } : answer;
}

function replayedHeaders(headers: Record<string, string> | undefined): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) if (!MOMENT_HEADER.test(name.toLowerCase())) kept[name] = value;
  return kept;
}

/**
 * A streamed answer passes through unchanged while its bytes are recorded (up to what can be
 * stored). When the provider's stream has ended, its record is stored before the response
 * ends (so the caller's next request finds it), or the key is released when the stream ended
 * with an error event; a stream that broke (the caller left, the upstream failed) releases it
 * too. The invocation waits for that write (an after-response task).
 */
function recordStream(req: GatewayRequest, res: HttpResponse, source: Readable, lease: Lease): HttpResponse {
  const chunks: Buffer[] = [];
  let size = 0;
  let settle: (outcome: Promise<void>) => void = () => {};
  const settled = new Promise<void>((resolve) => {
    let once = false;
    settle = (outcome) => {
      if (once) return;
      once = true;
      outcome.then(resolve, resolve);
    };
  });
  const tee = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      if (size <= MAX_COMPRESSED_INPUT_BYTES) chunks.push(chunk);
      else chunks.length = 0;
      callback(null, chunk);
    },
    flush(callback) {
      const body = size <= MAX_COMPRESSED_INPUT_BYTES ? Buffer.concat(chunks) : undefined;
      settle(body && endsWithErrorEvent(body) ? lease.release() : lease.store(answerOf(res, body)));
      settled.then(() => callback());
    },
  });
  source.on('error', (err) => tee.destroy(err));
  finished(tee, (err) => {
    if (!err) return;
    source.destroy();
    settle(lease.release());
  });
  afterResponse(req.context, () => settled);
  source.pipe(tee);
  return { ...res, body: tee };
}

/**
 * Whether an SSE body's last event is an error (chat and runs: a `data:` object with
 * `error`; Messages: `event: error`; Responses: `event: error` or `response.failed`).
 */
export function endsWithErrorEvent(body: Buffer): boolean {
  const tail = body
    .subarray(Math.max(0, body.length - 16 * 1024))
    .toString('utf8')
    .trimEnd();
  const lastEvent = tail.slice(tail.lastIndexOf('\n\n') + 1);
  if (/^event: ?(error|response\.failed)\s*$/m.test(lastEvent)) return true;
  const data = /^data: ?(\{.*\})\s*$/m.exec(lastEvent)?.[1];
  if (!data) return false;
  try {
    const parsed = JSON.parse(data) as { error?: unknown; type?: unknown };
    return parsed.error !== undefined && parsed.error !== null && (parsed.type === undefined || parsed.type === 'error');
  } catch {
    return false;
  }
}
