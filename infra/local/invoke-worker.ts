import './awslambda-shim';
import { resolve } from 'node:path';
import { Writable } from 'node:stream';
import { parentPort, workerData } from 'node:worker_threads';
import { ENDPOINT_GROUPS } from '../endpoint-groups';
import type { ResponseMetadata, StreamingHandler } from './awslambda-shim';
import { lambdaContext } from './lambda-context';
import type { FromWorker, ToWorker, WorkerData } from './worker-pool';

/**
 * One worker thread of the local runtime's multi-concurrency mode, as the Node.js runtime
 * of Lambda Managed Instances runs a function: the handler modules are loaded once per
 * thread (their module scope, caches and clients shared by every invocation of the
 * thread), and invocations arrive while others are still running, each with its own
 * response stream whose metadata and chunks go back to the main thread.
 */
const data = workerData as WorkerData;
const port = parentPort!;
const handlers = new Map<string, StreamingHandler>();
for (const group of ENDPOINT_GROUPS) {
  const file = data.bundlesDir ? resolve(data.bundlesDir, group.name, 'index.mjs') : resolve(import.meta.dirname, '../..', group.entry);
  handlers.set(group.name, ((await import(file)) as { handler: StreamingHandler }).handler);
}

const running = new Set<Promise<void>>();
const send = (message: FromWorker, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

/** The response stream a handler writes to; `metadata` is set by `awslambda.HttpResponseStream.from`. */
class MessageResponseStream extends Writable {
  metadata: ResponseMetadata = {};
  private headSent = false;
  constructor(private readonly id: number) {
    super();
  }
  private head(): void {
    if (this.headSent) return;
    this.headSent = true;
    send({ type: 'head', id: this.id, metadata: this.metadata });
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    this.head();
    const copy = new Uint8Array(chunk.byteLength);
    copy.set(chunk);
    send({ type: 'chunk', id: this.id, data: copy }, [copy.buffer]);
    done();
  }
  override _final(done: (err?: Error | null) => void): void {
    this.head();
    send({ type: 'end', id: this.id });
    done();
  }
}

const streams = new Map<number, MessageResponseStream>();

port.on('message', (message: ToWorker) => {
  if (message.type === 'invoke') {
    const stream = new MessageResponseStream(message.id);
    streams.set(message.id, stream);
    const handler = handlers.get(message.group)!;
    const context = lambdaContext({
      functionName: `gateway-${message.group}`,
      timeoutSeconds: 900,
      memoryMb: 2048,
      region: 'us-east-1',
      accountId: '000000000000',
    });
    const invocation = (async () => {
      try {
        await handler(message.event, stream as never, context);
        send({ type: 'done', id: message.id });
      } catch (err) {
        send({ type: 'done', id: message.id, error: String(err) });
      } finally {
        streams.delete(message.id);
      }
    })();
    running.add(invocation);
    void invocation.finally(() => running.delete(invocation));
  } else if (message.type === 'abort') {
    // The caller went away: tear the pipeline down as Lambda does (a premature close).
    streams.get(message.id)?.destroy();
  } else if (message.type === 'shutdown') {
    // Like the runtime's SIGTERM: let every invocation finish, its after-response work
    // (request logs) included, then report and let the thread end.
    void Promise.allSettled([...running]).then(() => send({ type: 'stopped', id: 0 }));
  }
});

send({ type: 'ready', id: 0 });
