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
  /** The sequential TTFB p50 of each interleaved round, in order. */
  roundTtfbP50: number[];
}

/** What one scenario's stream figures are measured with. */
export interface StreamPlan {
  /** Unrecorded streams per scenario before the first round (and warmup / rounds more before each round). */
  warmup: number;
  /** Sequential streams in all, split evenly across the rounds. */
  sequential: number;
  rounds: number;
  concurrency: number;
  perWorker: number;
}

const okSample = (s: StreamSample) => !s.error && s.status === 200 && s.bytes > 0;

/**
 * The streams phase for several scenarios at once. The sequential streams (the TTFB and total
 * figures, and so the "added" figures, one scenario's p50 minus its baseline's) are taken in
 * `rounds` interleaved rounds, every scenario in each round, the order reversed every other
 * round: a machine that slows down or speeds up during the phase moves a gateway and its
 * baseline alike, instead of whichever was measured in the slow minutes. Each round starts
 * with a few unrecorded streams per scenario (caches warm again after the others ran). The
 * concurrent streams follow, one scenario at a time. `beforeBlock` runs before each scenario's
 * streams of each round (the bench waits there for DynamoDB Local to finish the request-log
 * writes of the scenario before, which would otherwise slow the next one down, baselines
 * included, on a machine that runs the emulator beside the gateway).
 */
export async function measureStreamsInterleaved<K extends string>(
  specs: ReadonlyArray<{ name: K; spec: RequestSpec }>,
  plan: StreamPlan,
  beforeBlock: () => Promise<void> = async () => {},
): Promise<Map<K, StreamStats>> {
  const agents = new Map(specs.map(({ name }) => [name, new http.Agent({ keepAlive: true, maxSockets: Infinity })]));
  const seq = new Map(specs.map(({ name }) => [name, [] as StreamSample[]]));
  const roundP50 = new Map(specs.map(({ name }) => [name, [] as number[]]));
  const perRound = Math.max(1, Math.round(plan.sequential / plan.rounds));
  const rewarm = Math.max(1, Math.round(plan.warmup / plan.rounds));
  try {
    for (const { name, spec } of specs) for (let i = 0; i < plan.warmup; i++) await timeStream(agents.get(name)!, spec);
    for (let r = 0; r < plan.rounds; r++) {
      for (const { name, spec } of r % 2 ? [...specs].reverse() : specs) {
        await beforeBlock();
        const agent = agents.get(name)!;
        for (let i = 0; i < rewarm; i++) await timeStream(agent, spec);
        const samples: StreamSample[] = [];
        for (let i = 0; i < perRound; i++) samples.push(await timeStream(agent, spec));
        seq.get(name)!.push(...samples);
        const ttfbs = sortedOf(samples, (s) => s.ttfb);
        roundP50.get(name)!.push(round(percentile(ttfbs, 50)));
      }
    }
    const out = new Map<K, StreamStats>();
    for (const { name, spec } of specs) {
      const agent = agents.get(name)!;
      const conc: StreamSample[] = [];
      await Promise.all(
        Array.from({ length: plan.concurrency }, async () => {
          for (let i = 0; i < plan.perWorker; i++) conc.push(await timeStream(agent, spec));
        }),
      );
      const all = seq.get(name)!;
      const seqTtfb = sortedOf(all, (s) => s.ttfb);
      const seqTotal = sortedOf(all, (s) => s.total);
      out.set(name, {
        sequential: all.length,
        concurrent: conc.length,
        concurrency: plan.concurrency,
        ttfbP50: round(percentile(seqTtfb, 50)),
        ttfbP90: round(percentile(seqTtfb, 90)),
        totalP50: round(percentile(seqTotal, 50)),
        totalP90: round(percentile(seqTotal, 90)),
        concurrentTtfbP50: round(median(conc.filter(okSample).map((s) => s.ttfb))),
        concurrentTotalP50: round(median(conc.filter(okSample).map((s) => s.total))),
        errors: [...all, ...conc].filter((s) => !okSample(s)).length,
        roundTtfbP50: roundP50.get(name)!,
      });
    }
    return out;
  } finally {
    for (const agent of agents.values()) agent.destroy();
  }
}

const sortedOf = (xs: StreamSample[], f: (s: StreamSample) => number) => Float64Array.from(xs.filter(okSample).map(f)).sort();
