import { resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { LocalResponseStream, ResponseMetadata, StreamingHandler } from './awslambda-shim';

/** Settings a worker thread starts with. */
export interface WorkerData {
  /** Production bundles (`<dir>/<group>/index.mjs`); without, the TypeScript sources. */
  bundlesDir?: string;
}

export type ToWorker = { type: 'invoke'; id: number; group: string; event: unknown } | { type: 'abort'; id: number } | { type: 'shutdown'; id: 0 };

export type FromWorker =
  | { type: 'ready' | 'stopped'; id: 0 }
  | { type: 'head'; id: number; metadata: ResponseMetadata }
  | { type: 'chunk'; id: number; data: Uint8Array }
  | { type: 'end'; id: number }
  | { type: 'done'; id: number; error?: string };

export interface WorkerPool {
  /** A streaming handler for `group` that runs the invocation on the least busy thread. */
  handlerFor(group: string): StreamingHandler;
  /** Per thread: invocations served so far and the most it ran at once. */
  stats(): Array<{ served: number; maxInFlight: number }>;
  /** Lets every thread finish its invocations (after-response work included), then ends them. */
  stop(timeoutMs: number): Promise<void>;
}

interface Pending {
  stream: LocalResponseStream;
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * The local runtime's multi-concurrency mode: `threads` worker threads, each with its own
 * copy of every handler module, each taking many invocations at once, the way the Node.js
 * runtime of Lambda Managed Instances runs a function (worker threads, async handlers,
 * several concurrent requests per thread). The HTTP server stays on the main thread and
 * hands each invocation to the thread with the fewest in flight.
 */
export async function startWorkerPool(threads: number, data: WorkerData): Promise<WorkerPool> {
  const workers: Array<{ worker: Worker; inFlight: number; served: number; maxInFlight: number; pending: Map<number, Pending> }> = [];
  let nextId = 1;
  const entry = resolve(import.meta.dirname, 'invoke-worker-entry.mjs');
  const started: Worker[] = [];
  await Promise.all(
    Array.from({ length: threads }, async () => {
      const worker = new Worker(entry, { workerData: data });
      started.push(worker);
      const slot = { worker, inFlight: 0, served: 0, maxInFlight: 0, pending: new Map<number, Pending>() };
      worker.on('message', (m: FromWorker) => {
        const p = slot.pending.get(m.id);
        if (!p) return;
        if (m.type === 'head') {
          p.stream.metadata = m.metadata;
        } else if (m.type === 'chunk') {
          p.stream.write(Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength));
        } else if (m.type === 'end') {
          p.stream.end();
        } else if (m.type === 'done') {
          slot.pending.delete(m.id);
          slot.inFlight--;
          if (m.error && !p.stream.writableEnded) p.reject(new Error(m.error));
          else p.resolve();
        }
      });
      worker.on('error', (err) => {
        for (const p of slot.pending.values()) p.reject(err);
        slot.pending.clear();
      });
      await new Promise<void>((ready, fail) => {
        const onMessage = (m: FromWorker) => {
          if (m.type === 'ready') {
            worker.off('message', onMessage);
            ready();
          }
        };
        worker.on('message', onMessage);
        worker.once('error', fail);
        worker.once('exit', (code) => fail(new Error(`worker thread exited with ${code} during start-up`)));
      });
      workers.push(slot);
    }),
  ).catch(async (err: unknown) => {
    // One thread failed to load the handlers: end the others too, then report.
    await Promise.all(started.map((w) => w.terminate()));
    throw err;
  });

  return {
    handlerFor: (group) => (event, stream) =>
      new Promise<void>((resolveInvocation, reject) => {
        const slot = workers.reduce((a, b) => (b.inFlight < a.inFlight ? b : a));
        const id = nextId++;
        slot.inFlight++;
        slot.served++;
        slot.maxInFlight = Math.max(slot.maxInFlight, slot.inFlight);
        slot.pending.set(id, { stream, resolve: resolveInvocation, reject });
        stream.once('close', () => {
          if (slot.pending.has(id)) slot.worker.postMessage({ type: 'abort', id } satisfies ToWorker);
        });
        slot.worker.postMessage({ type: 'invoke', id, group, event } satisfies ToWorker);
      }),
    stats: () => workers.map((w) => ({ served: w.served, maxInFlight: w.maxInFlight })),
    stop: async (timeoutMs) => {
      await Promise.all(
        workers.map(
          (slot) =>
            new Promise<void>((done) => {
              const timer = setTimeout(() => void slot.worker.terminate().then(() => done()), timeoutMs);
              slot.worker.on('message', (m: FromWorker) => {
                if (m.type !== 'stopped') return;
                clearTimeout(timer);
                void slot.worker.terminate().then(() => done());
              });
              slot.worker.postMessage({ type: 'shutdown', id: 0 } satisfies ToWorker);
            }),
        ),
      );
    },
  };
}
