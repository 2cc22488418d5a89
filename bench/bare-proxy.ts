/**
 * The floor: the least a Node reverse proxy can do. One node:http listener per upstream in
 * BARE_TARGETS (comma-separated base URLs); each request is forwarded to the same path on
 * its upstream over a keep-alive agent, and the answer is piped back with its status and
 * headers. No auth, no parsing, no logging. Prints `{"ports":[…]}` once listening.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';

const targets = (process.env.BARE_TARGETS ?? '')
  .split(',')
  .filter(Boolean)
  .map((t) => new URL(t));
if (targets.length === 0) throw new Error('BARE_TARGETS is empty');

const agent = new http.Agent({ keepAlive: true, scheduling: 'lifo' });
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer']);

function forward(target: URL, req: IncomingMessage, res: ServerResponse): void {
  const headers: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(name)) headers[name] = value;
  headers.host = target.host;
  const upstream = http.request({ hostname: target.hostname, port: target.port, method: req.method, path: req.url, headers, agent }, (up) => {
    const out: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(up.headers)) if (!HOP_BY_HOP.has(name)) out[name] = value;
    res.writeHead(up.statusCode ?? 502, out);
    res.flushHeaders();
    up.pipe(res);
  });
  upstream.on('error', () => {
    if (!res.headersSent) res.writeHead(502).end();
    else res.destroy();
  });
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
}

const ports: number[] = [];
for (const target of targets) {
  const server = http.createServer({ noDelay: true }, (req, res) => forward(target, req, res));
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  ports.push((server.address() as { port: number }).port);
}
process.stdout.write(`${JSON.stringify({ ports })}\n`);
process.on('SIGTERM', () => process.exit(0));
