import http from 'node:http';

/**
 * A proxy to DynamoDB that, while `slow`, answers BatchWriteItem and UpdateItem calls
 * `delayMs` late, noting when each call arrived and when its answer left. Every call, slow
 * or not, is listed in `calls` (operation, body, and whether it has been answered).
 */
export function startSlowDynamoDb(target: string, delayMs: number) {
  const upstream = new URL(target);
  const state = {
    slow: false,
    received: [] as Array<{ operation: string; body: string; at: number }>,
    answered: [] as Array<{ operation: string; body: string; at: number }>,
    calls: [] as Array<{ operation: string; body: string; answered: boolean }>,
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const operation = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? '';
      const delay = state.slow && (operation === 'BatchWriteItem' || operation === 'UpdateItem') ? delayMs : 0;
      if (delay) state.received.push({ operation, body: body.toString('utf8'), at: performance.now() });
      const listed = { operation, body: body.toString('utf8'), answered: false };
      state.calls.push(listed);
      const forwarded = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
        const parts: Buffer[] = [];
        answer.on('data', (c: Buffer) => parts.push(c));
        answer.on('end', () =>
          setTimeout(() => {
            if (delay) state.answered.push({ operation, body: body.toString('utf8'), at: performance.now() });
            res.writeHead(answer.statusCode ?? 500, answer.headers);
            res.end(Buffer.concat(parts));
            listed.answered = true;
          }, delay),
        );
      });
      forwarded.on('error', () => req.socket.destroy());
      forwarded.end(body);
    });
  });
  return new Promise<{ url: string; state: typeof state; close: () => Promise<void> }>((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      resolve({
        url: `http://127.0.0.1:${port}`,
        state,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}
