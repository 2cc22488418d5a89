/**
 * Cold-start probe, run by bench/lib/cold-start.ts in a FRESH `node` process per sample
 * (bundled to bench/.tmp/cold-child.mjs first, so no TypeScript loader runs here):
 *
 * 1. install the local `awslambda` global (infra/local/awslambda-shim.ts, what the Lambda
 *    runtime provides before it loads a handler),
 * 2. time `import()` of one production function bundle (module scope: SDK clients, config),
 * 3. time the first invocation with a REST v1 proxy event, to the end of the response body
 *    (first request: auth read, caches empty, first connections) and to the end of the
 *    invocation (after-response work such as the request log),
 *
 * and print one JSON line. Settings come from the environment, as in Lambda. Without
 * BENCH_EVENT (workflow workers) only the import is timed.
 */
import { Writable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import type { ServerResponse } from 'node:http';
import { LocalResponseStream, type StreamingHandler } from '../infra/local/awslambda-shim';

/** Enough of http.ServerResponse for LocalResponseStream: headers and bytes go nowhere. */
class SinkResponse extends Writable {
  statusCode = 0;
  bytes = 0;
  headersSent = false;
  writeHead(status: number): this {
    this.statusCode = status;
    this.headersSent = true;
    return this;
  }
  flushHeaders(): void {}
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.bytes += chunk.length;
    done();
  }
}

const bundle = process.argv[2]!;
const event = process.env.BENCH_EVENT ? (JSON.parse(process.env.BENCH_EVENT) as Record<string, unknown>) : undefined;

const beforeImport = performance.now();
const mod = (await import(pathToFileURL(bundle).href)) as { handler: StreamingHandler };
const importMs = performance.now() - beforeImport;
const readyMs = performance.now();

if (!event) {
  // No request to send (workflow workers take Step Functions / SQS events): import only.
  process.stdout.write(
    `${JSON.stringify({ importMs, readyMs, responseMs: null, invocationMs: null, status: null, rssMb: process.memoryUsage().rss / 1024 / 1024 })}\n`,
  );
  process.exit(0);
}

const sink = new SinkResponse();
const stream = new LocalResponseStream(sink as unknown as ServerResponse);
const context = {
  functionName: 'bench',
  awsRequestId: 'bench-cold-start',
  callbackWaitsForEmptyEventLoop: false,
  getRemainingTimeInMillis: () => 900_000,
};
const invokeStart = performance.now();
let responseMs = NaN;
sink.on('finish', () => (responseMs = performance.now() - invokeStart));
let error: string | undefined;
try {
  await mod.handler(event, stream, context);
} catch (err) {
  error = String(err);
}
const invocationMs = performance.now() - invokeStart;
if (Number.isNaN(responseMs)) await new Promise((r) => sink.once('finish', r));

process.stdout.write(
  `${JSON.stringify({
    importMs,
    readyMs,
    responseMs: Number.isNaN(responseMs) ? performance.now() - invokeStart : responseMs,
    invocationMs,
    status: sink.statusCode,
    bytes: sink.bytes,
    rssMb: process.memoryUsage().rss / 1024 / 1024,
    ...(error ? { error } : {}),
  })}\n`,
);
process.exit(0);
