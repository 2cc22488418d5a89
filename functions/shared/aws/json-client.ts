import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import aws4 from 'aws4';
import { awsEnvCredentials, config } from '../config';
import { markUnavailable } from '../errors';

/**
 * A client for AWS services that speak the JSON protocol (DynamoDB, KMS, Secrets Manager): every operation
 * is a signed `POST /` of a JSON document naming the operation in `X-Amz-Target`. It replaces
 * the AWS SDK in the functions (most of the bundle and more than half the CPU of a storage
 * call went to the SDK's middleware; figures in bench/README.md) and keeps the SDK's observable behaviour: its
 * endpoint settings, its retry rules (3 attempts, its retry quota), its clock-skew correction
 * and its error shape (`name`, `message`, modelled members such as `CancellationReasons`,
 * `$metadata.httpStatusCode`).
 *
 * Blobs travel as base64 strings in this protocol; callers pass and read them as such.
 */

export interface AwsJsonService {
  /** SigV4 signing name and the first label of the regional endpoint. */
  name: string;
  /** `X-Amz-Target` is `<targetPrefix>.<Operation>`. */
  targetPrefix: string;
  contentType: 'application/x-amz-json-1.0' | 'application/x-amz-json-1.1';
  /** Endpoint override from the environment (config().awsEndpoints). */
  endpointOverride: () => string | undefined;
}

export const DYNAMODB: AwsJsonService = {
  name: 'dynamodb',
  targetPrefix: 'DynamoDB_20120810',
  contentType: 'application/x-amz-json-1.0',
  endpointOverride: () => config().awsEndpoints.dynamodb,
};

export const KMS: AwsJsonService = {
  name: 'kms',
  targetPrefix: 'TrentService',
  contentType: 'application/x-amz-json-1.1',
  endpointOverride: () => config().awsEndpoints.kms,
};

export const SECRETS_MANAGER: AwsJsonService = {
  name: 'secretsmanager',
  targetPrefix: 'secretsmanager',
  contentType: 'application/x-amz-json-1.1',
  endpointOverride: () => config().awsEndpoints.secretsManager,
};

/** SQS's AWS JSON protocol: the one call the request path may need (a dead-lettered log record) without the SDK's client. */
export const SQS: AwsJsonService = {
  name: 'sqs',
  targetPrefix: 'AmazonSQS',
  contentType: 'application/x-amz-json-1.0',
  endpointOverride: () => config().awsEndpoints.sqs,
};

export const regionalEndpoint = (service: string, region: string): string =>
  `https://${service}.${region}.${region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com'}`;

/** An error answered by the service (or a 5xx without a body), shaped like the SDK's. */
export class AwsServiceError extends Error {
  /** Modelled members of the error, e.g. `CancellationReasons` of TransactionCanceledException. */
  [member: string]: unknown;
  $fault: 'client' | 'server';
  $metadata: { httpStatusCode: number; requestId?: string; attempts?: number };

  constructor(name: string, message: string, status: number, requestId?: string) {
    super(message);
    this.name = name;
    this.$fault = status >= 500 ? 'server' : 'client';
    this.$metadata = { httpStatusCode: status, ...(requestId ? { requestId } : {}) };
  }
}

/** Members of an error body that are not copied onto the error. */
const NOT_MEMBERS = new Set(['__type', '__proto__', 'code', 'message', 'Message', 'name', 'stack', '$fault', '$metadata']);

/**
 * The error of a non-2xx answer. The type comes from `x-amzn-errortype`, else the body's
 * `code` or `__type`, reduced as the SDK does: `aws.protocols#Name:http://...` -> `Name`.
 */
export function parseAwsError(status: number, headers: IncomingHttpHeaders, text: string): AwsServiceError {
  let body: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
  } catch {
    // Not JSON (e.g. a proxy's error page): the status speaks.
  }
  const header = headers['x-amzn-errortype'];
  const raw = [typeof header === 'string' ? header : undefined, body.code, body.__type].find((v): v is string => typeof v === 'string' && v !== '');
  const name = (raw ? raw.split(',')[0]!.split(':')[0]!.split('#').pop() : undefined) || 'UnknownError';
  const message = typeof body.message === 'string' ? body.message : typeof body.Message === 'string' ? body.Message : name;
  const requestId = headers['x-amzn-requestid'];
  const err = new AwsServiceError(name, message, status, typeof requestId === 'string' ? requestId : undefined);
  for (const [key, value] of Object.entries(body)) if (!NOT_MEMBERS.has(key)) err[key] = value;
  return err;
}

// What the SDK retries (@smithy/core retry: isThrottlingError / isTransientError).
const THROTTLING_ERRORS = new Set([
  'BandwidthLimitExceeded',
  'EC2ThrottledException',
  'LimitExceededException',
  'PriorRequestNotComplete',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'SlowDown',
  'ThrottledException',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
  'TransactionInProgressException',
]);
/** Transient by name; ReplicatedWriteConflictException is the one DynamoDB error marked retryable in its model. */
const TRANSIENT_ERRORS = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException', 'ReplicatedWriteConflictException']);
const NETWORK_ERRORS = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

export type RetryKind = 'throttling' | 'transient';

/** Whether an attempt's failure is worth another attempt, and of which kind (it sets the backoff and the cost). */
export function retryKind(err: unknown): RetryKind | undefined {
  const e = err as { name?: unknown; code?: unknown; message?: unknown; $metadata?: { httpStatusCode?: number } } | undefined;
  const status = e?.$metadata?.httpStatusCode ?? 0;
  if (THROTTLING_ERRORS.has(String(e?.name)) || status === 429) return 'throttling';
  if (TRANSIENT_ERRORS.has(String(e?.name)) || NETWORK_ERRORS.has(String(e?.code)) || status >= 500) return 'transient';
  if (e?.name === 'InvalidSignatureException' && String(e.message).includes('Signature expired')) return 'transient';
  return undefined;
}

/**
 * The SDK's retry quota (@smithy/core util-retry StandardRetryStrategy, per client): a
 * bucket of 500 tokens; a retry after throttling takes 5, any other retry 14, and a call
 * is not retried when the bucket holds less. A success puts back what its last retry took,
 * or 1 when it needed none. A service in trouble thus gets first attempts only, instead of
 * three times the traffic.
 */
const RETRY_CAPACITY = 500;
const RETRY_COST: Record<RetryKind, number> = { throttling: 5, transient: 14 };
const NO_RETRY_REFUND = 1;

/** Errors a wrong local clock causes (@smithy/core CLOCK_SKEW_ERROR_CODES). */
const CLOCK_SKEW_ERRORS = new Set([
  'AccessDeniedException',
  'AuthFailure',
  'InvalidSignatureException',
  'RequestExpired',
  'RequestInTheFuture',
  'RequestTimeTooSkewed',
  'SignatureDoesNotMatch',
]);
/** The SDK retries such an error, re-signed, once the server's clock is this far from ours. */
const CLOCK_SKEW_THRESHOLD_MS = 240_000;

/**
 * The SDK's clock sampling (getUpdatedSystemClockOffset): the server's `Date` minus the local
 * time the answer arrived, unless a cache answered (`Age`) or the request took over 15 min.
 */
function clockOffsetFrom(headers: IncomingHttpHeaders, sentAt: number, current: number): number {
  const serverTime = headers.date === undefined || headers.age !== undefined ? NaN : Date.parse(headers.date);
  const now = Date.now();
  return Number.isNaN(serverTime) || now - sentAt > 900_000 ? current : serverTime - now;
}

/** The SDK's bases: 50 ms, 1 s after throttling; doubled per retry, capped at 20 s. */
const BACKOFF_BASE_MS: Record<RetryKind, number> = { transient: 50, throttling: 1_000 };
const MAX_BACKOFF_MS = 20_000;

/** Full jitter: uniform in [0, base * 2^(retry - 1)), `retry` counting from 1. */
export function backoffMs(kind: RetryKind, retry: number, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(BACKOFF_BASE_MS[kind] * 2 ** (retry - 1), MAX_BACKOFF_MS));
}

export interface AwsJsonClientOptions {
  /** Attempts per call, the first included. Default 3 (the SDK's default). */
  maxAttempts?: number;
  /** Time allowed for one attempt, response body included. */
  timeoutMs?: number;
}

export interface AwsJsonClient {
  /** One operation; resolves with the parsed response, rejects with an AwsServiceError or a network error. */
  send<T = Record<string, unknown>>(operation: string, input: object): Promise<T>;
}

/** Far above any DynamoDB or KMS latency; bounds a call on a connection that went silent. */
const DEFAULT_TIMEOUT_MS = 10_000;

// One keep-alive pool per container for every AWS endpoint (the SDK's socket limit).
const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 50, scheduling: 'lifo' }),
  https: new https.Agent({ keepAlive: true, maxSockets: 50, scheduling: 'lifo' }),
};

interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** SigV4's `X-Amz-Date`: `20240101T120000Z`. */
const amzDate = (epochMs: number): string => new Date(epochMs).toISOString().replace(/[-:]|\.\d{3}/g, '');

function post(url: URL, headers: Record<string, string | number>, body: string, timeoutMs: number): Promise<RawResponse> {
  const isHttps = url.protocol === 'https:';
  return new Promise<RawResponse>((resolve, reject) => {
    const req = (isHttps ? https : http).request(
      {
        hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
        port: url.port || undefined,
        // `/` unless an endpoint override has a path (it is signed as such too).
        path: url.pathname,
        method: 'POST',
        headers,
        agent: isHttps ? agents.https : agents.http,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', fail);
      },
    );
    function fail(err: Error) {
      clearTimeout(timer);
      reject(err);
      req.destroy();
    }
    const timer = setTimeout(() => {
      const err = new Error(`No complete answer from ${url.host} within ${timeoutMs} ms.`);
      err.name = 'TimeoutError';
      fail(err);
    }, timeoutMs);
    req.on('error', fail);
    req.end(body);
  });
}

export function createAwsJsonClient(service: AwsJsonService, opts: AwsJsonClientOptions = {}): AwsJsonClient {
  const maxAttempts = opts.maxAttempts ?? 3;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // Resolved on the first call: config() is read only after the runtime has set the env.
  let endpoint: URL | undefined;
  let retryTokens = RETRY_CAPACITY;
  /** Server time minus local time, learned from the answers' `Date`; requests are signed with it. */
  let clockOffsetMs = 0;

  async function attempt(operation: string, body: string): Promise<RawResponse> {
    endpoint ??= new URL(service.endpointOverride() ?? regionalEndpoint(service.name, config().region));
    // Signed again per attempt: the signature carries the time.
    const request = {
      host: endpoint.host,
      path: endpoint.pathname,
      method: 'POST',
      service: service.name,
      region: config().region,
      headers: {
        'content-type': service.contentType,
        'x-amz-target': `${service.targetPrefix}.${operation}`,
        'x-amz-date': amzDate(Date.now() + clockOffsetMs),
      },
      body,
    };
    // aws4 rather than the SigV4 signer the provider calls use (./sigv4.ts): these calls are
    // all one shape (a JSON POST), and it costs the JSON client less than half the CPU per
    // call (bench/README.md, session 28). It signs a copy of the headers, with `Host`,
    // `Content-Length` and any `X-Amz-Security-Token` added, and returns it.
    const headers = aws4.sign(request, awsEnvCredentials()).headers as Record<string, string | number>;
    return post(endpoint, headers, body, timeoutMs);
  }

  return {
    async send<T>(operation: string, input: object): Promise<T> {
      const body = JSON.stringify(input);
      let lastRetryCost: number | undefined;
      for (let attemptNo = 1; ; attemptNo++) {
        let failure: unknown;
        const offsetBefore = clockOffsetMs;
        try {
          const sentAt = Date.now();
          const res = await attempt(operation, body);
          clockOffsetMs = clockOffsetFrom(res.headers, sentAt, clockOffsetMs);
          if (res.status >= 200 && res.status < 300) {
            retryTokens = Math.min(RETRY_CAPACITY, retryTokens + (lastRetryCost ?? NO_RETRY_REFUND));
            return (res.text ? JSON.parse(res.text) : {}) as T;
          }
          failure = parseAwsError(res.status, res.headers, res.text);
        } catch (err) {
          failure = err;
        }
        // A clock error whose answer moved our offset far enough: worth one more try, re-signed.
        const skewCorrected =
          failure instanceof AwsServiceError &&
          CLOCK_SKEW_ERRORS.has(failure.name) &&
          clockOffsetMs !== offsetBefore &&
          Math.abs(clockOffsetMs) >= CLOCK_SKEW_THRESHOLD_MS;
        const kind = retryKind(failure) ?? (skewCorrected ? 'transient' : undefined);
        if (!kind || attemptNo >= maxAttempts || retryTokens < RETRY_COST[kind]) {
          if (failure instanceof AwsServiceError) failure.$metadata.attempts = attemptNo;
          throw kind ? markUnavailable(failure) : failure;
        }
        retryTokens -= lastRetryCost = RETRY_COST[kind];
        await new Promise((resolve) => setTimeout(resolve, backoffMs(kind, attemptNo)));
      }
    },
  };
}
