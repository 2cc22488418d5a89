import autocannon, { type Options } from 'autocannon';
import { cpuMs, schedMs } from './procs';

/** One HTTP request shape a scenario repeats. */
export interface RequestSpec {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
}

export interface LoadResult {
  connections: number;
  /** Requests per second over the measured window (all statuses). */
  rps: number;
  requests: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  /** Connection errors (timeouts included) + non-2xx answers. */
  errors: number;
  non2xx: number;
  durationS: number;
  /** Target rate, when the run was rate-limited. */
  overallRate?: number;
  /** CPU time (user + system) of the server under test per request, ms. */
  serverCpuMsPerReq?: number;
  /** Paced runs: each watched process's time on a CPU and waiting for one, % of the window. */
  sched?: Record<string, SchedShare>;
}

export interface SchedShare {
  /** Time on a CPU, % of wall time (100 = one core). */
  cpuPct: number;
  /** Time runnable but waiting for a CPU (preempted by other processes), % of wall time. */
  waitingPct: number;
}

export type Watched = Record<string, { pid: number; mainThread: boolean }>;

/** Percentile (nearest rank) of a sorted array. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export const median = (values: number[]): number => percentile(Float64Array.from(values).sort(), 50);
export const round = (v: number, digits = 2): number => (Number.isFinite(v) ? Math.round(v * 10 ** digits) / 10 ** digits : v);

/**
 * Drive one request shape with autocannon at a fixed concurrency. autocannon's own
 * histograms store whole milliseconds, too coarse for sub-millisecond overheads, so the
 * latency of every response (autocannon's hrtime measurement, fractional ms) is collected
 * from its `response` event and the percentiles are computed here.
 */
export async function runLoad(
  spec: RequestSpec,
  opts: { connections: number; durationS: number; overallRate?: number; record?: boolean; serverPid?: number },
): Promise<LoadResult> {
  const samples: number[] = [];
  const options: Options = {
    url: spec.url,
    method: spec.method,
    headers: spec.headers,
    body: spec.body,
    connections: opts.connections,
    duration: opts.durationS,
    timeout: 10,
    ...(opts.overallRate ? { overallRate: opts.overallRate } : {}),
  };
  const instance = autocannon(options);
  if (opts.record !== false) {
    (instance as unknown as NodeJS.EventEmitter).on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      if (status < 400) samples.push(ms);
    });
  }
  const cpuBefore = opts.serverPid ? cpuMs(opts.serverPid) : 0;
  const result = await instance;
  const cpuUsed = opts.serverPid ? cpuMs(opts.serverPid) - cpuBefore : NaN;
  const sorted = Float64Array.from(samples).sort();
  const total = result['1xx'] + result['2xx'] + result['3xx'] + result['4xx'] + result['5xx'];
  const sum = samples.reduce((a, b) => a + b, 0);
  return {
    connections: opts.connections,
    rps: round(total / result.duration, 0),
    requests: total,
    p50: round(percentile(sorted, 50)),
    p90: round(percentile(sorted, 90)),
    p99: round(percentile(sorted, 99)),
    mean: round(sum / Math.max(1, samples.length)),
    errors: result.errors + result.non2xx,
    non2xx: result.non2xx,
    durationS: result.duration,
    ...(opts.overallRate ? { overallRate: opts.overallRate } : {}),
    ...(opts.serverPid ? { serverCpuMsPerReq: round(cpuUsed / Math.max(1, total), 3) } : {}),
  };
}

/**
 * Open-loop load at a steady rate: one request every 1/rate s, evenly spaced (autocannon's
 * `overallRate` starts every connection's timer together, so requests arrive in bursts of
 * `connections`, which measures burst queueing rather than the latency at that rate).
 * Latency is from the moment a request is sent to the end of its answer.
 */
/**
 * Open-loop load: requests evenly spaced at `rate`, whatever the answers take. The first
 * `warmupS` seconds run at the same rate on the same connections and are not recorded, so
 * the figures are those of the steady state (connections open, caches and JIT warm, the
 * previous phase's backlog drained), not of the switch from closed-loop load.
 */
export async function runPaced(
  spec: RequestSpec,
  opts: { rate: number; durationS: number; warmupS?: number; serverPid?: number; watch?: Watched },
): Promise<LoadResult> {
  const { default: http } = await import('node:http');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const url = new URL(spec.url);
  const samples: number[] = [];
  let errors = 0;
  let non2xx = 0;
  let done = 0;
  let recording = false;
  const one = () =>
    new Promise<void>((resolve) => {
      const record = recording;
      const started = performance.now();
      const req = http.request(
        { hostname: url.hostname, port: url.port, path: url.pathname + url.search, method: spec.method, headers: spec.headers, agent },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (record) {
              if ((res.statusCode ?? 0) < 400) samples.push(performance.now() - started);
              else non2xx++;
              done++;
            }
            resolve();
          });
          res.on('error', () => {
            if (record) errors++;
            resolve();
          });
        },
      );
      req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
      req.on('error', () => {
        if (record) errors++;
        resolve();
      });
      req.end(spec.body);
    });
  const interval = 1000 / opts.rate;
  const pace = async (count: number) => {
    const inflight: Array<Promise<void>> = [];
    const start = performance.now();
    for (let i = 0; i < count; i++) {
      const wait = start + i * interval - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      inflight.push(one());
    }
    return inflight;
  };
  // Warm-up: paced like the measurement; its answers may still arrive while recording starts.
  const warmup = await pace(Math.round(opts.rate * (opts.warmupS ?? 0)));
  recording = true;
  const cpuBefore = opts.serverPid ? cpuMs(opts.serverPid) : 0;
  const watched = Object.entries(opts.watch ?? {});
  const schedBefore = watched.map(([, w]) => schedMs(w.pid, w.mainThread));
  const t0 = performance.now();
  await Promise.all(await pace(Math.round(opts.rate * opts.durationS)));
  await Promise.all(warmup);
  const elapsedMs = performance.now() - t0;
  const elapsedS = elapsedMs / 1000;
  const cpuUsed = opts.serverPid ? cpuMs(opts.serverPid) - cpuBefore : NaN;
  const sched = Object.fromEntries(
    watched.map(([name, w], i) => {
      const now = schedMs(w.pid, w.mainThread);
      const pct = (ms: number) => round((ms / elapsedMs) * 100, 1);
      return [name, { cpuPct: pct(now.running - schedBefore[i]!.running), waitingPct: pct(now.waiting - schedBefore[i]!.waiting) }];
    }),
  );
  agent.destroy();
  const sorted = Float64Array.from(samples).sort();
  return {
    connections: 0,
    rps: round(done / elapsedS, 0),
    requests: done,
    p50: round(percentile(sorted, 50)),
    p90: round(percentile(sorted, 90)),
    p99: round(percentile(sorted, 99)),
    mean: round(samples.reduce((a, b) => a + b, 0) / Math.max(1, samples.length)),
    errors: errors + non2xx,
    non2xx,
    durationS: round(elapsedS),
    overallRate: opts.rate,
    ...(opts.serverPid ? { serverCpuMsPerReq: round(cpuUsed / Math.max(1, done), 3) } : {}),
    ...(watched.length ? { sched } : {}),
  };
}

export interface DriveResult {
  requests: number;
  seconds: number;
  /** Latency of every answer, ms, sorted (request sent -> end of body). */
  latencies: Float64Array;
  statuses: Record<string, number>;
  errors: number;
}

/**
 * Closed loop: `connections` workers send requests one after another until `requests` have
 * been sent, each built by `specFor(i)` (so headers may vary per request); keep-alive. With
 * `pauseMs`, a worker waits that long after each answer (the gateway's after-response work
 * ends before the next request, as in a Lambda container that serves one at a time).
 */
export async function drive(specFor: (i: number) => RequestSpec, opts: { connections: number; requests: number; pauseMs?: number }): Promise<DriveResult> {
  const { default: http } = await import('node:http');
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.connections });
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  let next = 0;
  const one = (spec: RequestSpec) =>
    new Promise<void>((resolve) => {
      const url = new URL(spec.url);
      const started = performance.now();
      const req = http.request(
        { hostname: url.hostname, port: url.port, path: url.pathname + url.search, method: spec.method, headers: spec.headers, agent },
        (res) => {
          res.resume();
          res.on('end', () => {
            latencies.push(performance.now() - started);
            statuses[res.statusCode ?? 0] = (statuses[res.statusCode ?? 0] ?? 0) + 1;
            resolve();
          });
          res.on('error', () => {
            errors++;
            resolve();
          });
        },
      );
      req.setTimeout(30_000, () => req.destroy(new Error('timeout')));
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end(spec.body);
    });
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: opts.connections }, async () => {
      while (next < opts.requests) {
        await one(specFor(next++));
        if (opts.pauseMs) await new Promise((r) => setTimeout(r, opts.pauseMs));
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  agent.destroy();
  return { requests: opts.requests, seconds, latencies: Float64Array.from(latencies).sort(), statuses, errors };
}
