import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalGateway } from '../../infra/local/server';
import { call, startTestGateway } from '../support/gateway';

// A caller's path is appended to a provider's base URL (with the provider's stored key) by
// every route that forwards: the generic proxy, the pass-throughs of the assistants,
// fine-tuning and rerank groups, and the Responses routes for native providers. A path that
// could climb out of that base, in any encoding, is refused before anything is sent.

let gw: LocalGateway;
let upstream: Server;
let upstreamUrl: string;
/** `METHOD url` of every request the provider received, as it arrived on the wire. */
const received: string[] = [];

const MANAGED_KEY = 'sk-managed-stored-key-0123456789';
const managed = () => ({ 'x-gateway-provider': '@paths-openai' });
const rawKey = () => ({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': `${upstreamUrl}/v1`, authorization: 'Bearer sk-caller-key' });

/** One request with the path sent byte for byte (fetch would resolve `..` itself). */
function rawCall(method: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: any; text: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(gw.url);
    const req = request({ host: url.hostname, port: url.port, method, path, headers: { 'x-gateway-api-key': gw.adminKey, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body, text });
      });
    });
    req.on('error', reject);
    req.end(method === 'POST' ? '{}' : undefined);
  });
}

beforeAll(async () => {
  upstream = createServer((req, res) => {
    received.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'echo', method: req.method, url: req.url, authorization: req.headers.authorization }));
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  gw = await startTestGateway();
  const created = await call(gw, 'POST', '/v1/providers', {
    body: { slug: 'paths-openai', provider: 'openai', api_key: MANAGED_KEY, custom_host: `${upstreamUrl}/v1` },
  });
  expect(created.status, created.text).toBe(200);
});

afterAll(async () => {
  await gw?.stop();
  await new Promise((r) => upstream?.close(r));
});

beforeEach(() => {
  received.length = 0;
});

/** Ways of writing a step out of the base path (each aims at `/secret-root` on the provider host). */
const ESCAPES = [
  '..%2f..%2f..%2fsecret-root',
  '..%2F..%2F..%2Fsecret-root',
  '%2e%2e/%2e%2e/%2e%2e/secret-root',
  '%2E%2E%2F%2E%2E%2F%2E%2E%2Fsecret-root',
  '.%2e/.%2e/.%2e/secret-root',
  '..%5c..%5c..%5csecret-root',
  '..%5C..%5C..%5Csecret-root',
  '..\\..\\..\\secret-root',
  '../../../secret-root',
  './secret-root',
  '.%2fsecret-root',
  '%252e%252e%252f%252e%252e%252fsecret-root',
  '..%252f..%252f..%252fsecret-root',
  '%25252e%25252e%25252fsecret-root',
  '.%09./.%09./.%09./secret-root',
  '..%c0%af..%c0%afsecret-root',
  'models/./gpt-4o-mini',
];

/** Every route that hands a caller's path to a provider, with the headers that make it forward. */
const FORWARDERS: Array<{ name: string; method: string; prefix: string; headers: () => Record<string, string> }> = [
  { name: 'generic proxy: GET /v1/models/{id} through a managed provider', method: 'GET', prefix: '/v1/models/', headers: managed },
  { name: 'generic proxy: any path through a custom host with a raw key', method: 'GET', prefix: '/v1/', headers: rawKey },
  { name: 'generic proxy: POST through a managed provider', method: 'POST', prefix: '/v1/batches/', headers: managed },
  { name: 'generic proxy: DELETE through a managed provider', method: 'DELETE', prefix: '/v1/vector_stores/', headers: managed },
  { name: 'files pass-through (raw key): DELETE /v1/files', method: 'DELETE', prefix: '/v1/files/', headers: rawKey },
  { name: 'files, a path the group lacks (managed provider)', method: 'GET', prefix: '/v1/files/file-x/versions/', headers: managed },
  { name: 'assistants pass-through (raw key): /v1/threads', method: 'GET', prefix: '/v1/threads/', headers: rawKey },
  { name: 'assistants pass-through (raw key): /v1/assistants', method: 'POST', prefix: '/v1/assistants/', headers: rawKey },
  { name: 'assistants, a path the group lacks (managed provider)', method: 'GET', prefix: '/v1/threads/thread_x/files/', headers: managed },
  { name: 'fine-tuning pass-through (raw key)', method: 'GET', prefix: '/v1/fine_tuning/jobs/', headers: rawKey },
  { name: 'fine-tuning, a path the group lacks (managed provider)', method: 'GET', prefix: '/v1/fine_tuning/jobs/ftjob-x/checkpoints/', headers: managed },
  { name: 'rerank, a path the group lacks', method: 'GET', prefix: '/v1/rerank/', headers: managed },
];

describe('a proxied path that could leave the provider base is refused before anything is sent', () => {
  for (const route of FORWARDERS) {
    it(route.name, async () => {
      for (const climb of ESCAPES) {
        const path = route.prefix + climb;
        const res = await rawCall(route.method, path, route.headers());
        expect(res.status, `${route.method} ${path}: ${res.text}`).toBe(400);
        expect(res.body?.error, path).toMatchObject({ type: 'invalid_request_error', param: 'path', code: 'invalid_path' });
      }
      expect(received).toEqual([]);
    });
  }

  it('Responses routes of a native provider (retrieve, delete, input items)', async () => {
    for (const id of ['..', '%2e%2e', '.%2e', '.', '%2e', '%252e%252e', '..%5c', '..\\']) {
      for (const [method, path] of [
        ['GET', `/v1/responses/${id}`],
        ['DELETE', `/v1/responses/${id}`],
        ['GET', `/v1/responses/${id}/input_items`],
      ] as const) {
        const res = await rawCall(method, path, managed());
        expect(res.status, `${method} ${path}: ${res.text}`).toBe(400);
        expect(res.body?.error?.code, path).toBe('invalid_path');
      }
    }
    expect(received).toEqual([]);
  });

  it('a fine-tuning job whose file id would step up the provider path is refused before the workflow calls the provider', async () => {
    for (const id of ['..', '.', '%2e%2e', '..%2f..%2fsecret-root', '..\\secret-root']) {
      const res = await call(gw, 'POST', '/v1/fine_tuning/jobs', { body: { model: 'gpt-4o-mini', training_file: id }, headers: managed() });
      expect(res.status, `${id}: ${res.text}`).toBe(400);
      expect(res.body.error, id).toMatchObject({ type: 'invalid_request_error', param: 'training_file' });
      const validation = await call(gw, 'POST', '/v1/fine_tuning/jobs', {
        body: { model: 'gpt-4o-mini', training_file: 'file-ok', validation_file: id },
        headers: managed(),
      });
      expect(validation.status, `${id}: ${validation.text}`).toBe(400);
      expect(validation.body.error.param).toBe('validation_file');
    }
    expect(received).toEqual([]);
  });

  it('the refusal counts nothing against the caller: the same key still forwards a clean path', async () => {
    const res = await rawCall('GET', '/v1/models/gpt-4o-mini', managed());
    expect(res.status, res.text).toBe(200);
    expect(received).toEqual(['GET /v1/models/gpt-4o-mini']);
    expect(res.body.authorization).toBe(`Bearer ${MANAGED_KEY}`);
  });
});

describe('legitimate paths still forward', () => {
  it('an encoded character that is not a separator (a fine-tuned model id) reaches the provider', async () => {
    const res = await rawCall('GET', '/v1/models/ft%3Agpt-4o-mini%3Aacme%3Acustom%3Aabc123', managed());
    expect(res.status, res.text).toBe(200);
    expect(received).toHaveLength(1);
    expect(decodeURIComponent(received[0]!)).toBe('GET /v1/models/ft:gpt-4o-mini:acme:custom:abc123');
  });

  it('dots inside a segment, an encoded space, and an encoded `?` stay in the path', async () => {
    const res = await rawCall('GET', '/v1/files/file-v1.2..final%20copy%3F/content?limit=2', rawKey());
    expect(res.status, res.text).toBe(200);
    expect(received).toEqual(['GET /v1/files/file-v1.2..final%20copy%3F/content?limit=2']);
  });

  it('a native Responses id and a proxied run path forward as before', async () => {
    const retrieved = await rawCall('GET', '/v1/responses/resp_abc123', managed());
    expect(retrieved.status, retrieved.text).toBe(200);
    const run = await rawCall('GET', '/v1/threads/thread_abc/runs/run_abc', rawKey());
    expect(run.status, run.text).toBe(200);
    expect(received).toEqual(['GET /v1/responses/resp_abc123', 'GET /v1/threads/thread_abc/runs/run_abc']);
  });
});
