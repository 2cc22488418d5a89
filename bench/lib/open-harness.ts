/**
 * Issue 38 item 3: the figures the open gateway benchmarks publish, each against the bare
 * proxy in the same run, for chat with every feature on (auth, a managed provider, a saved
 * config, a requests policy, a budget, pricing, the request log):
 * - p99 added latency at concurrency 1 (sequential requests);
 * - throughput at a 10 ms p99 bound: the highest evenly spaced rate whose p99 stays within
 *   10 ms of the direct call's at the same rate;
 * - streaming TTFB and inter-event delay added, on a fake that streams many small frames at
 *   a fixed cadence;
 * - memory over a soak at steady load: RSS every 10 s, plateau and growth after warm-up.
 */
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { highestPassingRate, interEventGaps, soakFigures, type Probe } from './harness-math';
import { drive, percentile, round, runPaced, type RequestSpec } from './load';
import { rssMb } from './procs';

export const OPEN_SCENARIO =
  'unified chat through a saved config to a managed OpenAI provider (fake at 0 ms), the key under a requests/min policy and a monthly budget (never refusing), priced and logged';

export interface Percentiles {
  p50: number;
  p99: number;
}
const pcts = (sorted: ArrayLike<number>): Percentiles => ({ p50: round(percentile(sorted, 50), 3), p99: round(percentile(sorted, 99), 3) });
const sortedOf = (xs: number[]) => Float64Array.from(xs).sort();

/** The three sides every figure compares. */
export interface Sides<T> {
  direct: T;
  bare: T;
  gateway: T;
}

export interface OpenHarnessResults {
  scenario: string;
  sequential: { requests: number; latency: Sides<Percentiles>; addedP99: { bare: number; gateway: number }; addedP50: { bare: number; gateway: number } };
  bounded: {
    boundMs: number;
    durationS: number;
    rate: { bare: number; gateway: number };
    ratio: number;
    probes: { bare: Array<Probe<BoundDetail>>; gateway: Array<Probe<BoundDetail>> };
  };
  streams: {
    streams: number;
    cadenceMs: number;
    eventsPerStream: number;
    ttfb: Sides<Percentiles>;
    gap: Sides<Percentiles>;
    added: {
      bare: { ttfbP50: number; ttfbP99: number; gapP50: number; gapP99: number };
      gateway: { ttfbP50: number; ttfbP99: number; gapP50: number; gapP99: number };
    };
  };
  soak?: SoakResults;
}

export interface BoundDetail {
  p99: number;
  directP99: number;
  addedP99: number;
  achievedRps: number;
  errors: number;
}

export interface SoakSide {
  samples: Array<{ seconds: number; mb: number }>;
  plateauMb: number;
  growthMbPerMin: number;
  requests: number;
  errors: number;
}
export interface SoakResults {
  seconds: number;
  warmupS: number;
  sampleEveryS: number;
  rate: number;
  gateway: SoakSide;
  bare: SoakSide;
}

/** p50/p99 at concurrency 1: `requests` sequential requests per side, after 100 unrecorded. */
export async function sequentialLatency(specs: Sides<RequestSpec>, requests: number): Promise<OpenHarnessResults['sequential']> {
  const one = async (spec: RequestSpec) => {
    await drive(() => spec, { connections: 1, requests: 100 });
    return pcts((await drive(() => spec, { connections: 1, requests })).latencies);
  };
  const latency = { direct: await one(specs.direct), bare: await one(specs.bare), gateway: await one(specs.gateway) };
  return {
    requests,
    latency,
    addedP50: { bare: round(latency.bare.p50 - latency.direct.p50, 3), gateway: round(latency.gateway.p50 - latency.direct.p50, 3) },
    addedP99: { bare: round(latency.bare.p99 - latency.direct.p99, 3), gateway: round(latency.gateway.p99 - latency.direct.p99, 3) },
  };
}

/**
 * The highest rate (evenly spaced requests, open loop) at which a side's p99 is within
 * `boundMs` of the direct call's p99 at the same rate, with no errors and at least 95 % of
 * the rate achieved. The direct call is measured once per rate and shared by both sides.
 */
export async function boundedThroughput(
  specs: Sides<RequestSpec>,
  opts: { boundMs: number; durationS: number; warmupS: number; start: number; max: number; before?: () => Promise<void> },
): Promise<OpenHarnessResults['bounded']> {
  const direct = new Map<number, number>();
  const directP99 = async (rate: number) => {
    if (!direct.has(rate)) {
      await opts.before?.();
      direct.set(rate, (await runPaced(specs.direct, { rate, durationS: opts.durationS, warmupS: opts.warmupS })).p99);
    }
    return direct.get(rate)!;
  };
  const search = (spec: RequestSpec) =>
    highestPassingRate<BoundDetail>(
      async (rate) => {
        await opts.before?.();
        const r = await runPaced(spec, { rate, durationS: opts.durationS, warmupS: opts.warmupS });
        const base = await directP99(rate);
        const detail = { p99: r.p99, directP99: base, addedP99: round(r.p99 - base), achievedRps: r.rps, errors: r.errors };
        return { pass: r.errors === 0 && r.rps >= rate * 0.95 && detail.addedP99 <= opts.boundMs, detail };
      },
      { start: opts.start, factor: 2, max: opts.max, refinements: 3 },
    );
  const bare = await search(specs.bare);
  const gateway = await search(specs.gateway);
  return {
    boundMs: opts.boundMs,
    durationS: opts.durationS,
    rate: { bare: bare.rate, gateway: gateway.rate },
    ratio: round(gateway.rate / Math.max(1, bare.rate)),
    probes: { bare: bare.probes, gateway: gateway.probes },
  };
}

/** One SSE stream: ms to the first body byte, and each event's arrival (ms from the request). */
function timeEvents(agent: http.Agent, spec: RequestSpec): Promise<{ ttfb: number; arrivals: number[]; status: number }> {
  return new Promise((resolve, reject) => {
    const url = new URL(spec.url);
    const started = performance.now();
    const arrivals: number[] = [];
    let ttfb = Number.NaN;
    const req = http.request(
      { hostname: url.hostname, port: url.port, path: url.pathname + url.search, method: spec.method, headers: spec.headers, agent },
      (res) => {
        let tail = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const now = performance.now() - started;
          if (Number.isNaN(ttfb)) ttfb = now;
          // An event ends at a blank line; count the ends this read completed.
          const text = tail + chunk;
          let at = text.indexOf('\n\n');
          let last = -1;
          while (at >= 0) {
            arrivals.push(now);
            last = at;
            at = text.indexOf('\n\n', at + 2);
          }
          tail = last >= 0 ? text.slice(last + 2) : text;
        });
        res.on('end', () => resolve({ ttfb, arrivals, status: res.statusCode ?? 0 }));
        res.on('error', reject);
      },
    );
    req.setTimeout(60_000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(spec.body);
  });
}

/** `streams` sequential streams per side (after 5 unrecorded): TTFB and the gaps between events. */
export async function streamCadence(specs: Sides<RequestSpec>, opts: { streams: number; cadenceMs: number }): Promise<OpenHarnessResults['streams']> {
  let events = 0;
  const side = async (spec: RequestSpec) => {
    const agent = new http.Agent({ keepAlive: true });
    try {
      for (let i = 0; i < 5; i++) await timeEvents(agent, spec);
      const ttfbs: number[] = [];
      const gaps: number[] = [];
      for (let i = 0; i < opts.streams; i++) {
        const s = await timeEvents(agent, spec);
        if (s.status !== 200) throw new Error(`stream ${spec.url} -> ${s.status}`);
        ttfbs.push(s.ttfb);
        gaps.push(...interEventGaps(s.arrivals));
        events = Math.max(events, s.arrivals.length);
      }
      return { ttfb: pcts(sortedOf(ttfbs)), gap: pcts(sortedOf(gaps)) };
    } finally {
      agent.destroy();
    }
  };
  const direct = await side(specs.direct);
  const bare = await side(specs.bare);
  const gateway = await side(specs.gateway);
  const added = (s: typeof direct) => ({
    ttfbP50: round(s.ttfb.p50 - direct.ttfb.p50, 3),
    ttfbP99: round(s.ttfb.p99 - direct.ttfb.p99, 3),
    gapP50: round(s.gap.p50 - direct.gap.p50, 3),
    gapP99: round(s.gap.p99 - direct.gap.p99, 3),
  });
  return {
    streams: opts.streams,
    cadenceMs: opts.cadenceMs,
    eventsPerStream: events,
    ttfb: { direct: direct.ttfb, bare: bare.ttfb, gateway: gateway.ttfb },
    gap: { direct: direct.gap, bare: bare.gap, gateway: gateway.gap },
    added: { bare: added(bare), gateway: added(gateway) },
  };
}

/**
 * The gateway and the bare proxy under the same steady load at the same time (evenly spaced
 * requests at `rate` each), their RSS sampled every `sampleEveryS`; plateau and growth from
 * the samples after `warmupS`.
 */
export async function soak(
  sides: { gateway: { pid: number; spec: RequestSpec }; bare: { pid: number; spec: RequestSpec } },
  opts: { seconds: number; warmupS: number; sampleEveryS: number; rate: number },
): Promise<SoakResults> {
  const samples = { gateway: [] as SoakSide['samples'], bare: [] as SoakSide['samples'] };
  const t0 = performance.now();
  const sample = () => {
    const seconds = round((performance.now() - t0) / 1000, 1);
    samples.gateway.push({ seconds, mb: rssMb(sides.gateway.pid) });
    samples.bare.push({ seconds, mb: rssMb(sides.bare.pid) });
  };
  sample();
  const sampler = setInterval(sample, opts.sampleEveryS * 1000);
  try {
    const [gw, bare] = await Promise.all([
      runPaced(sides.gateway.spec, { rate: opts.rate, durationS: opts.seconds }),
      runPaced(sides.bare.spec, { rate: opts.rate, durationS: opts.seconds }),
    ]);
    sample();
    const figures = (s: SoakSide['samples']) => {
      const f = soakFigures(s, opts.warmupS);
      return { plateauMb: round(f.plateauMb, 1), growthMbPerMin: round(f.growthMbPerMin, 3) };
    };
    return {
      seconds: opts.seconds,
      warmupS: opts.warmupS,
      sampleEveryS: opts.sampleEveryS,
      rate: opts.rate,
      gateway: { samples: samples.gateway, ...figures(samples.gateway), requests: gw.requests, errors: gw.errors },
      bare: { samples: samples.bare, ...figures(samples.bare), requests: bare.requests, errors: bare.errors },
    };
  } finally {
    clearInterval(sampler);
    await sleep(0);
  }
}

function table(head: string[], rows: Array<Array<string | number>>): string {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}
const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)} x` : 'n/a');

export function renderOpenHarness(o: OpenHarnessResults): string {
  const s = o.sequential;
  const b = o.bounded;
  const st = o.streams;
  const parts = [
    `Scenario: ${o.scenario}. "Added" = minus the direct call to the fake at the same rate; ratio = gateway added / bare proxy added.`,
    '',
    table(
      ['figure', 'direct', 'bare proxy', 'gateway', 'bare added', 'gateway added', 'gateway / bare (added)'],
      [
        [
          `p50 at concurrency 1 (${s.requests} sequential), ms`,
          s.latency.direct.p50,
          s.latency.bare.p50,
          s.latency.gateway.p50,
          s.addedP50.bare,
          s.addedP50.gateway,
          ratio(s.addedP50.gateway, s.addedP50.bare),
        ],
        [
          `p99 at concurrency 1, ms`,
          s.latency.direct.p99,
          s.latency.bare.p99,
          s.latency.gateway.p99,
          s.addedP99.bare,
          s.addedP99.gateway,
          ratio(s.addedP99.gateway, s.addedP99.bare),
        ],
        [`throughput at p99 added <= ${b.boundMs} ms, req/s`, '', b.rate.bare, b.rate.gateway, '', '', `${b.ratio.toFixed(2)} x (rate)`],
        [
          `stream TTFB p50 (${st.streams} streams), ms`,
          st.ttfb.direct.p50,
          st.ttfb.bare.p50,
          st.ttfb.gateway.p50,
          st.added.bare.ttfbP50,
          st.added.gateway.ttfbP50,
          ratio(st.added.gateway.ttfbP50, st.added.bare.ttfbP50),
        ],
        [
          'stream TTFB p99, ms',
          st.ttfb.direct.p99,
          st.ttfb.bare.p99,
          st.ttfb.gateway.p99,
          st.added.bare.ttfbP99,
          st.added.gateway.ttfbP99,
          ratio(st.added.gateway.ttfbP99, st.added.bare.ttfbP99),
        ],
        [
          `inter-event delay p50 (frames every ${st.cadenceMs} ms), ms`,
          st.gap.direct.p50,
          st.gap.bare.p50,
          st.gap.gateway.p50,
          st.added.bare.gapP50,
          st.added.gateway.gapP50,
          ratio(st.added.gateway.gapP50, st.added.bare.gapP50),
        ],
        [
          'inter-event delay p99, ms',
          st.gap.direct.p99,
          st.gap.bare.p99,
          st.gap.gateway.p99,
          st.added.bare.gapP99,
          st.added.gateway.gapP99,
          ratio(st.added.gateway.gapP99, st.added.bare.gapP99),
        ],
        ...(o.soak
          ? [
              [
                `RSS plateau after ${o.soak.warmupS} s (soak ${o.soak.seconds} s at ${o.soak.rate} req/s each), MB`,
                '',
                o.soak.bare.plateauMb,
                o.soak.gateway.plateauMb,
                '',
                '',
                '',
              ],
              ['RSS growth after warm-up, MB/min (linear regression)', '', o.soak.bare.growthMbPerMin, o.soak.gateway.growthMbPerMin, '', '', ''],
            ]
          : []),
      ],
    ),
    '',
    `Bound search (${b.durationS} s per probe, evenly spaced requests; a probe passes with p99 added <= ${b.boundMs} ms, no errors and >= 95 % of the rate achieved): ` +
      `bare proxy ${b.probes.bare.map((p) => `${p.rate}${p.pass ? '' : ' (fail)'}`).join(', ')}; gateway ${b.probes.gateway.map((p) => `${p.rate}${p.pass ? '' : ' (fail)'}`).join(', ')} req/s.`,
  ];
  if (o.soak) {
    const every = Math.max(1, Math.ceil(o.soak.gateway.samples.length / 12));
    const picks = o.soak.gateway.samples.map((g, i) => ({ g, b: o.soak!.bare.samples[i] })).filter((_, i, all) => i % every === 0 || i === all.length - 1);
    parts.push(
      '',
      `RSS over the soak (every ${o.soak.sampleEveryS} s, shown every ${every * o.soak.sampleEveryS} s): ` +
        picks.map((p) => `${p.g.seconds} s ${p.g.mb}/${p.b?.mb ?? 'n/a'}`).join(', ') +
        ` MB (gateway/bare proxy); requests ${o.soak.gateway.requests}/${o.soak.bare.requests}, errors ${o.soak.gateway.errors}/${o.soak.bare.errors}.`,
    );
  }
  return parts.join('\n');
}
