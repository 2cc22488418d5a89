import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { median, percentile, round, type RequestSpec } from './load';

export interface StreamSample {
  status: number;
  /** ms from sending the request to the first body byte. */
  ttfb: number;
  /** ms from sending the request to the end of the body. */
  total: number;
  bytes: number;
  error?: string;
}

/** One streamed request over node:http; times the first body byte and the end. */
export function timeStream(agent: http.Agent, spec: RequestSpec, timeoutMs = 60_000): Promise<StreamSample> {
  return new Promise((resolve) => {
    const url = new URL(spec.url);
    const started = performance.now();
    let ttfb = NaN;
    let bytes = 0;
    let status = 0;
    const done = (error?: string) => {
      clearTimeout(timer);
      resolve({ status, ttfb, total: performance.now() - started, bytes, ...(error ? { error } : {}) });
    };
    const req = http.request(
      { hostname: url.hostname, port: url.port, path: url.pathname + url.search, method: spec.method, headers: spec.headers, agent },
      (res) => {
        status = res.statusCode ?? 0;
        res.on('data', (chunk: Buffer) => {
          if (bytes === 0) ttfb = performance.now() - started;
          bytes += chunk.length;
        });
        res.on('end', () => done());
        res.on('error', (err) => done(err.message));
      },
    );
    const timer = setTimeout(() => req.destroy(new Error('timeout')), timeoutMs);
    req.on('error', (err) => done(err.message));
    req.end(spec.body);
  });
}

export interface StreamStats {
  sequential: number;
  concurrent: number;
  concurrency: number;
  ttfbP50: number;
  ttfbP90: number;
  totalP50: number;
  totalP90: number;
  /** Concurrent phase: medians under `concurrency` parallel streams. */
  concurrentTtfbP50: number;
  concurrentTotalP50: number;
  errors: number;
}

/**
 * `sequential` streams one after the other (the clean TTFB / total figures), then
 * `concurrency` workers running `perWorker` streams each (the figures under some load).
 */
export async function measureStreams(
  spec: RequestSpec,
  opts: { sequential: number; concurrency: number; perWorker: number; warmup: number },
): Promise<StreamStats> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  try {
    for (let i = 0; i < opts.warmup; i++) await timeStream(agent, spec);
    const seq: StreamSample[] = [];
    for (let i = 0; i < opts.sequential; i++) seq.push(await timeStream(agent, spec));
    const conc: StreamSample[] = [];
    await Promise.all(
      Array.from({ length: opts.concurrency }, async () => {
        for (let i = 0; i < opts.perWorker; i++) conc.push(await timeStream(agent, spec));
      }),
    );
    const ok = (s: StreamSample) => !s.error && s.status === 200 && s.bytes > 0;
    const sortedOf = (xs: StreamSample[], f: (s: StreamSample) => number) => Float64Array.from(xs.filter(ok).map(f)).sort();
    const seqTtfb = sortedOf(seq, (s) => s.ttfb);
    const seqTotal = sortedOf(seq, (s) => s.total);
    return {
      sequential: seq.length,
      concurrent: conc.length,
      concurrency: opts.concurrency,
      ttfbP50: round(percentile(seqTtfb, 50)),
      ttfbP90: round(percentile(seqTtfb, 90)),
      totalP50: round(percentile(seqTotal, 50)),
      totalP90: round(percentile(seqTotal, 90)),
      concurrentTtfbP50: round(median(conc.filter(ok).map((s) => s.ttfb))),
      concurrentTotalP50: round(median(conc.filter(ok).map((s) => s.total))),
      errors: [...seq, ...conc].filter((s) => !ok(s)).length,
    };
  } finally {
    agent.destroy();
  }
}
