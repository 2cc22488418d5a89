import { Writable } from 'node:stream';
import type { ServerResponse } from 'node:http';

/**
 * The Lambda Node runtime provides a global `awslambda` with `streamifyResponse` and
 * `HttpResponseStream`; every Lambda entry calls it at module load. This shim gives the local runtime
 * and tests the same surface, writing straight to an http.ServerResponse so chunks reach
 * the caller as the handler produces them. Import it before any handler module.
 */
export interface ResponseMetadata {
  statusCode?: number;
  headers?: Record<string, string>;
  multiValueHeaders?: Record<string, string[]>;
  cookies?: string[];
}

export class LocalResponseStream extends Writable {
  metadata: ResponseMetadata = {};
  private headWritten = false;

  constructor(private readonly res: ServerResponse) {
    super();
    res.on('close', () => {
      // The caller went away before we finished: tear the pipeline down like Lambda does.
      // No error object: nothing may be listening yet (the handler can still be waiting for
      // the provider), and an unhandled 'error' would crash the process. The pipeline sees a
      // premature close, which aborts the upstream call all the same.
      if (!res.writableFinished) this.destroy();
    });
  }

  private writeHead(): void {
    if (this.headWritten) return;
    this.headWritten = true;
    const headers: Record<string, string | string[]> = { ...this.metadata.headers };
    for (const [name, values] of Object.entries(this.metadata.multiValueHeaders ?? {})) headers[name] = values;
    if (this.metadata.cookies?.length) headers['set-cookie'] = this.metadata.cookies;
    this.res.writeHead(this.metadata.statusCode ?? 200, headers);
    // Head, first chunk (and the end, for a one-chunk body) leave in one write, as one
    // packet, the way API Gateway sends them; node:http groups later writes of one tick.
    this.res.cork();
    process.nextTick(() => this.res.uncork());
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    const first = !this.headWritten;
    this.writeHead();
    const flushed = this.res.write(chunk);
    // An event stream's first event leaves with the head at once, as the Lambda runtime sends
    // it, not at the end of this tick (a translated stream may still be converting the other
    // events of the same upstream read). A JSON body still leaves together with its end.
    if (first && this.isEventStream()) this.res.uncork();
    if (flushed) done();
    else this.res.once('drain', () => done());
  }

  private isEventStream(): boolean {
    const type = Object.entries(this.metadata.headers ?? {}).find(([name]) => name.toLowerCase() === 'content-type')?.[1];
    return typeof type === 'string' && type.startsWith('text/event-stream');
  }

  override _final(done: (err?: Error | null) => void): void {
    this.writeHead();
    this.res.end(done);
  }
}

type StreamingHandler = (event: unknown, stream: LocalResponseStream, context: unknown) => Promise<void>;

const g = globalThis as unknown as { awslambda?: Record<string, unknown> };
// Replace anything that lacks streamifyResponse (another module may have defined a bare global).
if (typeof g.awslambda?.streamifyResponse !== 'function')
  g.awslambda = {
    ...g.awslambda,
    streamifyResponse: (fn: StreamingHandler) => fn,
    HttpResponseStream: {
      from(stream: LocalResponseStream, metadata: ResponseMetadata) {
        stream.metadata = metadata;
        return stream;
      },
    },
  };

// aws-local-stepfunctions needs Promise.withResolvers, which Node 20 lacks.
const P = Promise as unknown as { withResolvers?: () => unknown };
P.withResolvers ??= function withResolvers<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
};

export type { StreamingHandler };
