import { createServer, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalResponseStream } from '../../infra/local/awslambda-shim';

// The local runtime's response stream (infra/local/awslambda-shim.ts) against a real
// http.Server and client. What is asserted is whether the response is still corked right
// after the first write, not how long anything took.

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** Serve one request with `handle`, call the server, and return the body the client got. */
async function serveOnce(handle: (res: ServerResponse) => void): Promise<{ status: number; type: string | undefined; body: string }> {
  server = createServer((_req, res) => handle(res));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('local response stream', () => {
  it("hands an event stream's head and first event to the socket at once; node:http groups later writes of the same tick", async () => {
    const corkedAfter: number[] = [];
    const got = await serveOnce((res) => {
      const stream = new LocalResponseStream(res);
      stream.metadata = { statusCode: 200, headers: { 'Content-Type': 'text/event-stream' } };
      stream.write('data: {"n":1}\n\n');
      corkedAfter.push(res.writableCorked);
      stream.write('data: {"n":2}\n\n');
      corkedAfter.push(res.writableCorked);
      stream.end('data: [DONE]\n\n');
    });
    // 0: head and first event went to the socket; 1: node:http corks the socket for the
    // rest of the tick itself once a write finds it uncorked.
    expect(corkedAfter).toEqual([0, 1]);
    expect(got).toEqual({ status: 200, type: 'text/event-stream', body: 'data: {"n":1}\n\ndata: {"n":2}\n\ndata: [DONE]\n\n' });
  });

  it('keeps a JSON body corked with its head until the end of the tick, so head, body and end leave together', async () => {
    const corkedAfter: number[] = [];
    const got = await serveOnce((res) => {
      const stream = new LocalResponseStream(res);
      stream.metadata = { statusCode: 201, headers: { 'content-type': 'application/json' } };
      stream.write('{"ok":');
      corkedAfter.push(res.writableCorked);
      stream.end('true}');
    });
    expect(corkedAfter).toEqual([1]);
    expect(got).toEqual({ status: 201, type: 'application/json', body: '{"ok":true}' });
  });
});
