import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AwsServiceError,
  backoffMs,
  createAwsJsonClient,
  parseAwsError,
  regionalEndpoint,
  retryKind,
  type AwsJsonService,
} from '../../functions/shared/aws/json-client';
import { awsEnvCredentials, parseConfig } from '../../functions/shared/config';
import { isConditionFailed } from '../../functions/shared/db/ops';
import { asGatewayError } from '../../functions/shared/errors';

// ---- a local endpoint that records each request and answers from a script ---------------

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

type Reply = { status: number; body?: unknown; headers?: Record<string, string> } | 'hang';
/** A scripted reply, or one computed from the request (e.g. a server checking the signature's time). */
type Answer = Reply | ((req: Seen) => Reply);

let server: Server;
let endpoint: string;
let seen: Seen[] = [];
let script: Answer[] = [];

beforeAll(async () => {
  server = createServer((req, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request: Seen = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      seen.push(request);
      const scripted = script.shift() ?? { status: 200, body: {} };
      const answer = typeof scripted === 'function' ? scripted(request) : scripted;
      if (answer === 'hang') return;
      const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? {});
      res.writeHead(answer.status, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'req-1', ...answer.headers });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
afterEach(() => {
  seen = [];
  script = [];
  delete process.env.AWS_SESSION_TOKEN;
});

const service = (overrides: Partial<AwsJsonService> = {}): AwsJsonService => ({
  name: 'dynamodb',
  targetPrefix: 'DynamoDB_20120810',
  contentType: 'application/x-amz-json-1.0',
  endpointOverride: () => endpoint,
  ...overrides,
});

// ---- signing and request shape ---------------------------------------------------------

const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

/** SigV4 from its specification, for a `POST /` without a query. */
function expectedSignature(req: Seen, signed: string[], secret: string, region: string, service: string): string {
  const amzDate = String(req.headers['x-amz-date']);
  const day = amzDate.slice(0, 8);
  const canonicalHeaders = signed.map((n) => `${n}:${String(req.headers[n]).trim()}\n`).join('');
  const canonicalRequest = ['POST', '/', '', canonicalHeaders, signed.join(';'), sha256(req.body)].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonicalRequest)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, day), region), service), 'aws4_request');
  return createHmac('sha256', key).update(stringToSign).digest('hex');
}

describe('AWS JSON client: the request', () => {
  it('POSTs the JSON input to / with the target and content type, signed with the env credentials', async () => {
    script = [{ status: 200, body: { Item: { pk: { S: 'a' } } } }];
    const client = createAwsJsonClient(service());
    const out = await client.send('GetItem', { TableName: 't', Key: { pk: { S: 'a' } } });
    expect(out).toEqual({ Item: { pk: { S: 'a' } } });

    expect(seen).toHaveLength(1);
    const req = seen[0]!;
    expect(req.method).toBe('POST');
    expect(req.url).toBe('/');
    expect(JSON.parse(req.body)).toEqual({ TableName: 't', Key: { pk: { S: 'a' } } });
    expect(req.headers['content-type']).toBe('application/x-amz-json-1.0');
    expect(req.headers['x-amz-target']).toBe('DynamoDB_20120810.GetItem');
    expect(req.headers['content-length']).toBe(String(Buffer.byteLength(req.body)));
    expect(req.headers['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);
    expect(req.headers['x-amz-security-token']).toBeUndefined();
    const signed = ['content-length', 'content-type', 'host', 'x-amz-date', 'x-amz-target'];
    const day = String(req.headers['x-amz-date']).slice(0, 8);
    // test/support/setup.ts puts `local` / `local` in the environment.
    expect(req.headers.authorization).toBe(
      `AWS4-HMAC-SHA256 Credential=local/${day}/us-east-1/dynamodb/aws4_request, SignedHeaders=${signed.join(';')}, ` +
        `Signature=${expectedSignature(req, signed, 'local', 'us-east-1', 'dynamodb')}`,
    );
  });

  it('signs a session token and speaks JSON 1.1 for KMS', async () => {
    process.env.AWS_SESSION_TOKEN = 'session-token-example';
    const client = createAwsJsonClient(service({ name: 'kms', targetPrefix: 'TrentService', contentType: 'application/x-amz-json-1.1' }));
    await client.send('Decrypt', { CiphertextBlob: 'AAEC' });
    const req = seen[0]!;
    expect(req.headers['content-type']).toBe('application/x-amz-json-1.1');
    expect(req.headers['x-amz-target']).toBe('TrentService.Decrypt');
    expect(req.headers['x-amz-security-token']).toBe('session-token-example');
    const signed = ['content-length', 'content-type', 'host', 'x-amz-date', 'x-amz-security-token', 'x-amz-target'];
    expect(req.headers.authorization).toContain(`/us-east-1/kms/aws4_request, SignedHeaders=${signed.join(';')}, `);
    expect(req.headers.authorization).toContain(`Signature=${expectedSignature(req, signed, 'local', 'us-east-1', 'kms')}`);
  });

  it('resolves an empty 200 body to {}', async () => {
    script = [{ status: 200, body: '' }];
    expect(await createAwsJsonClient(service()).send('PutItem', {})).toEqual({});
  });
});

describe('AWS JSON client: endpoints and credentials', () => {
  it('takes the service endpoint, else AWS_ENDPOINT_URL, else none (the regional one)', () => {
    const base = { AWS_REGION: 'eu-west-1' };
    expect(parseConfig(base).awsEndpoints).toEqual({ dynamodb: undefined, kms: undefined, secretsManager: undefined, sqs: undefined });
    expect(parseConfig({ ...base, AWS_ENDPOINT_URL: 'http://all:1' }).awsEndpoints).toEqual({
      dynamodb: 'http://all:1',
      kms: 'http://all:1',
      secretsManager: 'http://all:1',
      sqs: 'http://all:1',
    });
    expect(
      parseConfig({
        ...base,
        AWS_ENDPOINT_URL: 'http://all:1',
        AWS_ENDPOINT_URL_KMS: 'http://kms:2',
        AWS_ENDPOINT_URL_DYNAMODB: '',
        AWS_ENDPOINT_URL_SECRETS_MANAGER: 'http://sm:3',
        AWS_ENDPOINT_URL_SQS: 'http://sqs:4',
      }).awsEndpoints,
    ).toEqual({
      dynamodb: 'http://all:1',
      kms: 'http://kms:2',
      secretsManager: 'http://sm:3',
      sqs: 'http://sqs:4',
    });
    expect(regionalEndpoint('dynamodb', 'eu-west-1')).toBe('https://dynamodb.eu-west-1.amazonaws.com');
    expect(regionalEndpoint('kms', 'cn-north-1')).toBe('https://kms.cn-north-1.amazonaws.com.cn');
  });

  it('reads credentials from the environment and says which are missing, never echoing a value', () => {
    expect(awsEnvCredentials({ AWS_ACCESS_KEY_ID: 'AKID', AWS_SECRET_ACCESS_KEY: 'shh' })).toEqual({ accessKeyId: 'AKID', secretAccessKey: 'shh' });
    expect(awsEnvCredentials({ AWS_ACCESS_KEY_ID: 'AKID', AWS_SECRET_ACCESS_KEY: 'shh', AWS_SESSION_TOKEN: 'tok' }).sessionToken).toBe('tok');
    expect(() => awsEnvCredentials({ AWS_ACCESS_KEY_ID: 'AKID-VISIBLE' })).toThrow(/AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set/);
    expect(() => awsEnvCredentials({ AWS_ACCESS_KEY_ID: 'AKID-VISIBLE' })).not.toThrow(/AKID-VISIBLE/);
  });
});

// ---- errors ----------------------------------------------------------------------------

describe('AWS JSON client: errors', () => {
  it('names the error after the part of __type behind #, with the message and status', () => {
    const err = parseAwsError(
      400,
      { 'x-amzn-requestid': 'rid' },
      JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException', message: 'The conditional request failed' }),
    );
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('ConditionalCheckFailedException');
    expect(err.message).toBe('The conditional request failed');
    expect(err.$metadata).toEqual({ httpStatusCode: 400, requestId: 'rid' });
    expect(err.$fault).toBe('client');
    expect(isConditionFailed(err)).toBe(true);
  });

  it('keeps modelled members such as CancellationReasons, and reads Message too', () => {
    const err = parseAwsError(
      400,
      {},
      JSON.stringify({
        __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
        Message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed]',
        CancellationReasons: [{ Code: 'None' }, { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' }],
      }),
    );
    expect(err.name).toBe('TransactionCanceledException');
    expect(err.message).toMatch(/^Transaction cancelled/);
    expect(err.CancellationReasons).toEqual([{ Code: 'None' }, { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' }]);
    expect(isConditionFailed(err)).toBe(true);
    const conflict = parseAwsError(
      400,
      {},
      JSON.stringify({ __type: 'x#TransactionCanceledException', CancellationReasons: [{ Code: 'TransactionConflict' }] }),
    );
    expect(isConditionFailed(conflict)).toBe(false);
  });

  it('prefers x-amzn-errortype and strips its suffix; falls back to UnknownError', () => {
    expect(parseAwsError(400, { 'x-amzn-errortype': 'ValidationException:http://internal.amazon.com/coral/com.amazon.coral.validate/' }, '{}').name).toBe(
      'ValidationException',
    );
    expect(parseAwsError(400, {}, JSON.stringify({ code: 'AccessDeniedException', message: 'no' })).name).toBe('AccessDeniedException');
    const html = parseAwsError(503, {}, '<html>Service Unavailable</html>');
    expect(html.name).toBe('UnknownError');
    expect(html.$metadata.httpStatusCode).toBe(503);
    expect(html.$fault).toBe('server');
  });

  it('never lets a body member replace the prototype, name or metadata', () => {
    const err = parseAwsError(400, {}, '{"__type":"x#Boom","__proto__":{"polluted":true},"name":"Other","$metadata":{},"Extra":1}');
    expect(err).toBeInstanceOf(AwsServiceError);
    expect(err.name).toBe('Boom');
    expect(err.$metadata.httpStatusCode).toBe(400);
    expect((err as { polluted?: unknown }).polluted).toBeUndefined();
    expect(err.Extra).toBe(1);
  });
});

// ---- retries ---------------------------------------------------------------------------

const awsError = (name: string, status = 400) => new AwsServiceError(name, 'm', status);

describe('AWS JSON client: what is retried', () => {
  it.each([
    ['ProvisionedThroughputExceededException', 400, 'throttling'],
    ['ThrottlingException', 400, 'throttling'],
    ['RequestLimitExceeded', 400, 'throttling'],
    ['TransactionInProgressException', 400, 'throttling'],
    ['UnknownError', 429, 'throttling'],
    ['InternalServerError', 500, 'transient'],
    ['ServiceUnavailable', 503, 'transient'],
    ['ReplicatedWriteConflictException', 400, 'transient'],
    ['ConditionalCheckFailedException', 400, undefined],
    ['ValidationException', 400, undefined],
    ['TransactionCanceledException', 400, undefined],
    ['TransactionConflictException', 400, undefined],
    ['ResourceNotFoundException', 400, undefined],
    ['AccessDeniedException', 400, undefined],
  ] as const)('%s (HTTP %i): %s', (name, status, kind) => {
    expect(retryKind(awsError(name, status))).toBe(kind);
  });

  it('retries network failures and timeouts, not other errors', () => {
    expect(retryKind(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))).toBe('transient');
    expect(retryKind(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBe('transient');
    expect(retryKind(Object.assign(new Error('late'), { name: 'TimeoutError' }))).toBe('transient');
    expect(retryKind(new SyntaxError('Unexpected token'))).toBeUndefined();
    expect(retryKind(new Error('No AWS credentials'))).toBeUndefined();
  });

  it('backs off exponentially with full jitter, capped at 20 s', () => {
    const high = () => 0.999999;
    expect(backoffMs('transient', 1, () => 0)).toBe(0);
    expect(backoffMs('transient', 1, high)).toBe(49);
    expect(backoffMs('transient', 2, high)).toBe(99);
    expect(backoffMs('throttling', 1, high)).toBe(999);
    expect(backoffMs('throttling', 3, high)).toBe(3999);
    expect(backoffMs('throttling', 20, high)).toBe(19999);
    for (let i = 0; i < 100; i++) expect(backoffMs('transient', 2)).toBeLessThan(100);
  });
});

describe('AWS JSON client: attempts', () => {
  const internal = { status: 500, body: { __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: 'boom' } };

  it('retries a 5xx and succeeds on a later attempt', async () => {
    script = [internal, internal, { status: 200, body: { ok: true } }];
    expect(await createAwsJsonClient(service()).send('PutItem', {})).toEqual({ ok: true });
    expect(seen).toHaveLength(3);
    // Each attempt is signed anew (same body, its own date).
    expect(seen.every((r) => typeof r.headers.authorization === 'string')).toBe(true);
  });

  it('gives up after maxAttempts (3) with the last error and the attempt count', async () => {
    script = [internal, internal, internal, internal];
    const err = await createAwsJsonClient(service())
      .send('PutItem', {})
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AwsServiceError);
    expect(err).toMatchObject({ name: 'InternalServerError', message: 'boom', $metadata: { httpStatusCode: 500, attempts: 3 } });
    expect(seen).toHaveLength(3);
  });

  it('retries throttling', async () => {
    script = [{ status: 400, body: { __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException', message: 'slow down' } }];
    expect(await createAwsJsonClient(service(), { maxAttempts: 2 }).send('Query', {})).toEqual({});
    expect(seen).toHaveLength(2);
  });

  it('never retries a failed condition or a validation error', async () => {
    for (const type of ['ConditionalCheckFailedException', 'ValidationException']) {
      seen = [];
      script = [{ status: 400, body: { __type: `com.amazonaws.dynamodb.v20120810#${type}`, message: 'no' } }];
      const err = await createAwsJsonClient(service())
        .send('PutItem', {})
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ name: type, $metadata: { httpStatusCode: 400, attempts: 1 } });
      expect(seen).toHaveLength(1);
    }
  });

  it('times out an attempt that gets no answer', async () => {
    script = ['hang'];
    const err = await createAwsJsonClient(service(), { maxAttempts: 1, timeoutMs: 100 })
      .send('GetItem', {})
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'TimeoutError' });
  });

  it('storage that keeps timing out is a 503 for the caller; a refused condition stays an internal error', async () => {
    script = ['hang', 'hang'];
    const timedOut = await createAwsJsonClient(service(), { maxAttempts: 2, timeoutMs: 50 })
      .send('GetItem', {})
      .catch((e: unknown) => e);
    expect(timedOut).toMatchObject({ name: 'TimeoutError' });
    expect(asGatewayError(timedOut).toBody()).toEqual({
      error: { message: "The gateway's storage did not answer in time. Retry the request.", type: 'server_error', param: null, code: 'storage_unavailable' },
    });
    expect(asGatewayError(timedOut).status).toBe(503);

    script = [{ status: 400, body: { __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException', message: 'no' } }];
    const refused = await createAwsJsonClient(service())
      .send('PutItem', {})
      .catch((e: unknown) => e);
    expect(asGatewayError(refused)).toMatchObject({ status: 500, code: 'internal_error' });
  });

  it('retries a refused connection, then reports it', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const client = createAwsJsonClient(service({ endpointOverride: () => `http://127.0.0.1:${port}` }), { maxAttempts: 2 });
    await expect(client.send('GetItem', {})).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });
});

describe('AWS JSON client: retry quota (the SDK standard strategy)', () => {
  const internal = { status: 500, body: { __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: 'boom' } };
  const throttled = { status: 400, body: { __type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException', message: 'slow down' } };
  const attemptsOf = async (client: ReturnType<typeof createAwsJsonClient>, answers: Answer[]) => {
    script = [...answers];
    seen = [];
    const out = await client.send('PutItem', {}).then(
      () => 'ok',
      (e: AwsServiceError) => e.$metadata.attempts,
    );
    script = [];
    return { out, requests: seen.length };
  };

  it('takes 14 tokens of 500 per retry, 5 after throttling, and stops retrying when the bucket runs dry', async () => {
    const client = createAwsJsonClient(service());
    // 17 failing calls with two retries each: 476 tokens, 24 left.
    for (let i = 0; i < 17; i++) expect(await attemptsOf(client, [internal, internal, internal])).toEqual({ out: 3, requests: 3 });
    // One retry (10 left), then none: not enough for another.
    expect(await attemptsOf(client, [internal, internal, internal])).toEqual({ out: 2, requests: 2 });
    expect(await attemptsOf(client, [internal, internal])).toEqual({ out: 1, requests: 1 });
    // Throttling retries are cheaper: two of them fit in the 10 left.
    expect(await attemptsOf(client, [throttled, throttled, throttled])).toEqual({ out: 3, requests: 3 });
    expect(await attemptsOf(client, [throttled])).toEqual({ out: 1, requests: 1 });
    // Another client has its own bucket.
    expect(await attemptsOf(createAwsJsonClient(service()), [internal, internal, internal])).toEqual({ out: 3, requests: 3 });
  });

  it('refunds 1 per success without a retry, and the retry cost on a success after a retry', async () => {
    const client = createAwsJsonClient(service());
    for (let i = 0; i < 18; i++) await attemptsOf(client, [internal, internal, internal]);
    expect(await attemptsOf(client, [internal, internal])).toEqual({ out: 1, requests: 1 }); // 10 left
    for (let i = 0; i < 4; i++) expect(await attemptsOf(client, [])).toEqual({ out: 'ok', requests: 1 }); // 14
    // A retry that succeeds takes 14 and gives the 14 back...
    expect(await attemptsOf(client, [internal])).toEqual({ out: 'ok', requests: 2 });
    // ...so one more retry still fits, then the bucket is empty.
    expect(await attemptsOf(client, [internal, internal, internal])).toEqual({ out: 2, requests: 2 });
    expect(await attemptsOf(client, [internal, internal])).toEqual({ out: 1, requests: 1 });
  });
});

describe('AWS JSON client: clock skew', () => {
  const amzTime = (d: string) => Date.parse(d.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6Z'));
  /** DynamoDB with its clock `skewMs` from ours: a signature more than 5 minutes off its clock is refused. */
  const dynamodbAt = (skewMs: number) => (req: Seen) => {
    const serverNow = Date.now() + skewMs;
    const signedAt = amzTime(String(req.headers['x-amz-date']));
    const headers = { date: new Date(serverNow).toUTCString() };
    if (Math.abs(signedAt - serverNow) <= 300_000) return { status: 200, body: { Item: {} }, headers };
    const message =
      signedAt > serverNow
        ? 'Signature not yet current: signed later than the server time + 5 min.'
        : 'Signature expired: signed earlier than the server time - 5 min.';
    return { status: 400, body: { __type: 'com.amazon.coral.service#InvalidSignatureException', message }, headers };
  };

  it('re-signs with the server time when a clock error comes with a Date far from ours, and keeps the offset', async () => {
    const client = createAwsJsonClient(service());
    const skew = -60 * 60_000; // the server is an hour behind us
    script = [dynamodbAt(skew), dynamodbAt(skew)];
    expect(await client.send('GetItem', {})).toEqual({ Item: {} });
    expect(seen).toHaveLength(2);
    const [first, second] = seen.map((r) => amzTime(String(r.headers['x-amz-date'])));
    expect(Math.abs(first! - Date.now())).toBeLessThan(60_000);
    expect(Math.abs(second! - (Date.now() + skew))).toBeLessThan(60_000);
    // Later calls are signed with the corrected time from the start.
    seen = [];
    script = [dynamodbAt(skew)];
    expect(await client.send('GetItem', {})).toEqual({ Item: {} });
    expect(seen).toHaveLength(1);
  });

  it('does not retry a signature error when the clocks agree', async () => {
    const client = createAwsJsonClient(service());
    script = [
      { status: 400, body: { __type: 'com.amazon.coral.service#InvalidSignatureException', message: 'The request signature we calculated does not match' } },
    ];
    const err = await client.send('GetItem', {}).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'InvalidSignatureException', $metadata: { attempts: 1 } });
    expect(seen).toHaveLength(1);
  });

  it('retries an expired signature once the clock is corrected (server ahead of us)', async () => {
    const client = createAwsJsonClient(service());
    script = [dynamodbAt(30 * 60_000), dynamodbAt(30 * 60_000)];
    expect(await client.send('GetItem', {})).toEqual({ Item: {} });
    expect(seen).toHaveLength(2);
  });
});
