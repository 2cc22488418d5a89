import { request } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { call, startTestGateway } from '../support/gateway';

// What the local server answers before a handler runs (API Gateway's part on AWS): a body
// over 10 MB and headers over Node's limit. Each caller gets the whole answer, a JSON error
// in the gateway's shape, never a reset connection or an empty response.

let gw: LocalGateway;

beforeAll(async () => {
  gw = await startTestGateway();
});

afterAll(async () => {
  await gw?.stop();
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One request over a fresh connection; `body` is sent whole, with or without a declared length. */
function send(path: string, headers: Record<string, string>, body?: Buffer, declareLength = true): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const url = new URL(gw.url);
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path,
        agent: false,
        headers: {
          'x-gateway-api-key': gw.adminKey,
          'content-type': 'application/json',
          ...headers,
          ...(declareLength ? {} : { 'transfer-encoding': 'chunked' }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('a body over the limit', () => {
  const body = Buffer.alloc(60_000_000, 0x61);

  it('100 callers sending 60 MB (10 at a time; half declare the length, half stream it chunked) all get the JSON 413', async () => {
    const results: Array<Answer | Error> = [];
    for (let batch = 0; batch < 10; batch++) {
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => send('/v1/chat/completions', {}, body, i % 2 === 0).catch((err: Error) => err)));
      results.push(...answers);
    }
    const failures = results.filter((r) => r instanceof Error).map((r) => (r as Error).message);
    expect(failures, failures.join('; ')).toEqual([]);
    for (const r of results as Answer[]) {
      expect(r.status).toBe(413);
      expect(r.headers['content-type']).toBe('application/json');
      expect(JSON.parse(r.text)).toEqual({
        error: { message: 'Request body exceeds the limit of 10485760 bytes.', type: 'invalid_request_error', param: null, code: 'payload_too_large' },
      });
    }
  }, 180_000);

  it('the gateway answers normally afterwards', async () => {
    const res = await call(gw, 'GET', '/v1/api-keys');
    expect(res.status, res.text).toBe(200);
  });
});

describe('a request Node cannot parse', () => {
  it('headers over the limit get a 431 with the JSON error body', async () => {
    const res = await send('/v1/chat/completions', { 'x-filler': 'a'.repeat(20_000) }, Buffer.from('{}'));
    expect(res.status).toBe(431);
    expect(res.headers['content-type']).toBe('application/json');
    expect(JSON.parse(res.text)).toMatchObject({
      error: { type: 'invalid_request_error', param: null, code: 'request_header_fields_too_large' },
    });
    expect(JSON.parse(res.text).error.message).toContain('16384 bytes');
  });

  it('a request line over the same limit (a 20 KB path) gets the same 431', async () => {
    const res = await send(`/v1/threads/${'t'.repeat(20_000)}`, {}, Buffer.from('{}'));
    expect(res.status).toBe(431);
    expect(JSON.parse(res.text).error.code).toBe('request_header_fields_too_large');
  });

  it('a malformed request line gets a 400 with the JSON error body', async () => {
    const url = new URL(gw.url);
    const text = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      const chunks: Buffer[] = [];
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      socket.on('error', reject);
    });
    expect(text).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
    expect(body).toMatchObject({ error: { type: 'invalid_request_error', code: 'malformed_request' } });
  });

  it('the gateway answers normally afterwards', async () => {
    const res = await call(gw, 'GET', '/v1/api-keys');
    expect(res.status, res.text).toBe(200);
  });
});
