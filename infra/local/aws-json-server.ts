import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

/** An error the emulated service answers with, as `{__type, message}` (what the SDK reads). */
export class AwsJsonError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

export interface AwsJsonServerOptions {
  /** `x-amz-target` prefix, e.g. `TrentService.` (KMS) or `AWSStepFunctions.`. */
  targetPrefix: string;
  /** `application/x-amz-json-1.0` or `-1.1`, as the real service speaks. */
  contentType: string;
  /** Operation name -> handler of the parsed input; the result is the response body. */
  operations: Readonly<Record<string, (input: Record<string, unknown>) => unknown>>;
  /** Name for messages, e.g. `local KMS`. */
  service: string;
  /** Called for unexpected failures (answered as InternalFailure). */
  onError?: (err: Error) => void;
}

/**
 * A loopback endpoint speaking the AWS JSON protocol, so production code's SDK clients
 * reach local emulators through AWS_ENDPOINT_URL_<SERVICE> unchanged.
 */
export async function startAwsJsonServer(opts: AwsJsonServerOptions): Promise<{ endpoint: string; stop: () => Promise<void> }> {
  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const reply = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'content-type': opts.contentType, 'content-length': Buffer.byteLength(text), 'x-amzn-requestid': randomUUID() });
      res.end(text);
    };
    try {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const target = String(req.headers['x-amz-target'] ?? '');
      const op = target.startsWith(opts.targetPrefix) ? target.slice(opts.targetPrefix.length) : '';
      const fn = Object.hasOwn(opts.operations, op) ? opts.operations[op] : undefined;
      if (!fn) throw new AwsJsonError('UnknownOperationException', `The ${opts.service} does not implement '${target}'.`);
      const input = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      reply(200, (await fn(input)) ?? {});
    } catch (err) {
      if (err instanceof AwsJsonError) return reply(err.status, { __type: err.type, message: err.message });
      opts.onError?.(err as Error);
      reply(500, { __type: 'InternalFailure', message: `The ${opts.service} failed.` });
    }
  };
  const server = createServer((req, res) => void serve(req, res));
  await new Promise<void>((r, j) => {
    server.once('error', j);
    server.listen(0, '127.0.0.1', () => r());
  });
  return {
    endpoint: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    stop: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
