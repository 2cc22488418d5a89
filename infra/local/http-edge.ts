import { maxHeaderSize, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * What the local server answers itself, before a request becomes an event (API Gateway's
 * part on AWS): a body over the payload limit (413) and a request Node cannot parse, such
 * as headers over its limit (431). Both in the gateway's error shape, and both delivered:
 * the connection is closed only once the caller has finished sending, since closing a
 * socket with unread bytes resets it and the caller may lose the answer with it.
 */

export const MAX_BODY = 10 * 1024 * 1024; // API Gateway's payload limit

/** How much of a refused body is read and dropped before the connection is cut anyway. */
const MAX_DISCARD_BYTES = 1024 * 1024 * 1024;
/** How long a refused request may take to finish sending before the connection is cut. */
const DISCARD_MS = 30_000;

const errorBody = (message: string, code: string) => JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code } });

export function readBody(req: IncomingMessage): Promise<Buffer | 'too_large'> {
  // A declared length over the limit is refused before a byte is buffered.
  if (Number(req.headers['content-length']) > MAX_BODY) return Promise.resolve('too_large');
  // Events rather than `for await`: the async iterator costs a few promises per chunk.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        req.off('data', onData);
        resolve('too_large');
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks, size)));
    req.once('error', reject);
    req.once('close', () => {
      if (!req.complete) reject(new Error('request aborted'));
    });
  });
}

/**
 * The 413 for a body over MAX_BODY: answered at once, the rest of the body read and
 * dropped, and the connection closed when the caller has sent it all (or sends too much,
 * or too slowly).
 */
export function refuseOversizedBody(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = errorBody(`Request body exceeds the limit of ${MAX_BODY} bytes.`, 'payload_too_large');
  res.writeHead(413, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' });
  res.write(body);
  return new Promise((resolve) => {
    let discarded = 0;
    const cut = () => {
      req.destroy();
      res.destroy();
    };
    const timer = setTimeout(cut, DISCARD_MS);
    timer.unref();
    req.on('data', (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > MAX_DISCARD_BYTES) cut();
    });
    req.once('end', () => res.end());
    req.on('error', cut);
    req.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
    req.resume();
  });
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

/** Status, code and message for a request Node's parser refused (`clientError`). */
function describeClientError(err: NodeJS.ErrnoException): { status: number; code: string; message: string } {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return {
        status: 431,
        code: 'request_header_fields_too_large',
        message: `The request headers exceed the limit of ${maxHeaderSize} bytes (the request line and all header lines together).`,
      };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'HPE_HEADERS_TIMEOUT':
      return { status: 408, code: 'request_timeout', message: 'The request was not received in time.' };
    default:
      return { status: 400, code: 'malformed_request', message: 'The request is not valid HTTP/1.1.' };
  }
}

/**
 * Node's `clientError`: the request could not be parsed, so no handler sees it. The caller
 * gets a complete response in the error shape (Node's default is an empty one), and the
 * socket closes once the caller stops sending.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const { status, code, message } = describeClientError(err);
  const body = errorBody(message, code);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_TEXT[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
  const timer = setTimeout(() => socket.destroy(), DISCARD_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  socket.once('end', () => socket.destroy());
  socket.resume();
}
