import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { streamBody } from '../fakes/faulty-upstream';

/** Helpers of the streamed fault tests: SSE parsing, memory watching, hand-written upstreams. */

export interface SseEvent {
  event?: string;
  data: string;
}

export function parseEvents(text: string): SseEvent[] {
  return text
    .split(/\r?\n\r?\n/)
    .filter((block) => block.trim())
    .map((block) => {
      const lines = block.split(/\r?\n/);
      const event = lines
        .find((l) => l.startsWith('event:'))
        ?.slice(6)
        .trim();
      const data = lines
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n');
      return { event, data };
    });
}

/** Peak RSS growth of this process (gateway and fakes) until `stop`. */
export function watchRss(): { stop(): number } {
  const base = process.memoryUsage().rss;
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  return {
    stop() {
      clearInterval(timer);
      peak = Math.max(peak, process.memoryUsage().rss);
      return peak - base;
    },
  };
}

/**
 * Write `totalBytes` of filler into `res`, 64 KiB at a time and waiting for `drain`, so the
 * bytes are made as they are read and never held in memory; `onSent` learns each chunk.
 * Stops early when `res` is destroyed (the reader went away).
 */
export async function writeFiller(res: ServerResponse, totalBytes: number, onSent: (bytes: number) => void = () => {}): Promise<void> {
  const filler = Buffer.alloc(64 * 1024, 'a');
  for (let sent = 0; sent < totalBytes && !res.destroyed; sent += filler.length) {
    onSent(filler.length);
    if (!res.write(filler))
      await new Promise<void>((r) => {
        // Whichever comes first removes the other: a long write waits thousands of times.
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          r();
        };
        res.once('drain', done);
        res.once('close', done);
      });
  }
}

/**
 * An upstream whose stream starts normally, then sends one SSE line of `lineBytes`, made
 * chunk by chunk with backpressure (never held in memory); counts its open connections.
 */
export async function startHugeLineUpstream(lineBytes: number): Promise<{ url: string; open(): number; sent(): number; close(): Promise<void> }> {
  let sent = 0;
  const upstream = await startScripted(async (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`${streamBody('huge', false).split('\n\n')[0]}\n\n`);
    res.write('data: {"padding":"');
    await writeFiller(res, lineBytes, (n) => (sent += n));
    res.end('"}\n\n');
  });
  return { ...upstream, sent: () => sent };
}

/** An upstream that answers every request with `script` (a hand-written Anthropic stream here). */
export async function startScripted(script: (res: ServerResponse) => Promise<void> | void): Promise<{ url: string; open(): number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => void script(res));
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    open: () => sockets.size,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
