import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RequestSpec } from './load';
import { median, round } from './load';
import { rssMb } from './procs';
import { timeStream, type StreamSample } from './streams';

export interface RssResult {
  streams: number;
  /** RSS after warm-up, idle, before the streams (MB). */
  beforeMb: number;
  /** RSS once every stream had its first byte and all were still open (MB). */
  allOpenMb: number;
  /** Highest RSS sampled while streams were open (MB). */
  peakMb: number;
  /** RSS 2 s after the last stream ended (MB). */
  afterMb: number;
  /** (allOpen - before) / streams, KB per open stream. */
  perStreamKb: number;
  completed: number;
  errors: number;
  /** Median stream duration (ms): the fake's frames x chunk delay plus any queueing. */
  medianStreamMs: number;
  /** ms until all streams had their first byte. */
  allOpenAfterMs: number;
}

/**
 * `count` concurrent slow streams through a server process, opened in batches (so the
 * listen backlog never overflows), sampling the process's RSS every 100 ms.
 */
export async function measureRss(pid: number, spec: RequestSpec, count: number, warm: RequestSpec): Promise<RssResult> {
  const warmAgent = new http.Agent({ keepAlive: true });
  for (let i = 0; i < 50; i++) await timeStream(warmAgent, warm);
  warmAgent.destroy();
  await sleep(1500);
  const beforeMb = rssMb(pid);

  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  let peakMb = beforeMb;
  const sampler = setInterval(() => {
    try {
      peakMb = Math.max(peakMb, rssMb(pid));
    } catch {
      /* process gone */
    }
  }, 100);
  const started = Date.now();
  let firstBytes = 0;
  let allOpenMb = NaN;
  let allOpenAfterMs = NaN;
  const onFirstByte = () => {
    firstBytes++;
    if (firstBytes === count) {
      allOpenAfterMs = Date.now() - started;
      allOpenMb = rssMb(pid);
    }
  };
  const runs: Array<Promise<StreamSample>> = [];
  for (let i = 0; i < count; i++) {
    runs.push(timeStreamWithFirstByte(agent, spec, onFirstByte));
    if (i % 100 === 99) await sleep(50);
  }
  const samples = await Promise.all(runs);
  clearInterval(sampler);
  agent.destroy();
  await sleep(2000);
  const afterMb = rssMb(pid);
  const ok = samples.filter((s) => !s.error && s.status === 200);
  // A stream that failed before its first byte leaves "all open" unreached: report the peak.
  if (Number.isNaN(allOpenMb)) allOpenMb = peakMb;
  return {
    streams: count,
    beforeMb,
    allOpenMb,
    peakMb,
    afterMb,
    perStreamKb: round(((allOpenMb - beforeMb) * 1024) / count, 1),
    completed: ok.length,
    errors: samples.length - ok.length,
    medianStreamMs: round(median(ok.map((s) => s.total)), 0),
    allOpenAfterMs,
  };
}

function timeStreamWithFirstByte(agent: http.Agent, spec: RequestSpec, onFirstByte: () => void): Promise<StreamSample> {
  // timeStream reports the first byte only at the end; a tiny wrapper watches for it live.
  const url = new URL(spec.url);
  return new Promise((resolve) => {
    const started = Date.now();
    let bytes = 0;
    let status = 0;
    let ttfb = NaN;
    const req = http.request({ hostname: url.hostname, port: url.port, path: url.pathname, method: spec.method, headers: spec.headers, agent }, (res) => {
      status = res.statusCode ?? 0;
      res.on('data', (c: Buffer) => {
        if (bytes === 0) {
          ttfb = Date.now() - started;
          onFirstByte();
        }
        bytes += c.length;
      });
      res.on('end', () => resolve({ status, ttfb, total: Date.now() - started, bytes }));
      res.on('error', (e) => resolve({ status, ttfb, total: Date.now() - started, bytes, error: e.message }));
    });
    req.setTimeout(120_000, () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({ status, ttfb, total: Date.now() - started, bytes, error: e.message }));
    req.end(spec.body);
  });
}
