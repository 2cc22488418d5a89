import type { BundleInfo, ColdStartRow } from './cold-start';
import type { CostResults, RightSizingRow } from './cost';
import { renderBatch, type BatchResult } from './batch';
import { renderHeat, type HeatResults } from './heat';
import type { LoadResult, SchedShare } from './load';
import { renderOpenHarness, type OpenHarnessResults } from './open-harness';
import type { RssResult } from './rss';
import type { Latency, Scenario } from './scenarios';
import type { StorageRow } from './storage';
import type { StreamStats } from './streams';

export interface LoadRow extends LoadResult {
  scenario: Scenario;
  latencyMs: Latency;
  baseline: Scenario;
  /** p50 / p99 minus the baseline's at the same latency and concurrency (ms). */
  addedP50: number;
  addedP99: number;
  loadAvg: string;
}

export interface StreamRow extends StreamStats {
  scenario: Scenario;
  baseline: Scenario;
  ttfbAddedP50: number;
  totalAddedP50: number;
  loadAvg: string;
}

export interface HalfSaturation {
  saturationRps: number;
  rate: number;
  direct: LoadResult;
  gateway: LoadResult;
  addedP50: number;
  addedP99: number;
  /**
   * The floor at the same rate: the bare proxy alone, and again while DynamoDB Local writes
   * as many request-log records per second as the gateway causes (bench/record-writer.ts).
   */
  floor?: { bare: LoadResult; bareWithRecords: LoadResult; addedP99: number; addedP99WithRecords: number };
}

/**
 * CPU time (ms) per request of every process on the machine during one round, the records
 * DynamoDB Local wrote after the round included, and the share of the cores they used.
 */
export interface MachineCpu {
  perRequest: { loadClient: number; fake: number; server: number; emulator: number; total: number };
  /** All four processes' CPU time over the round, % of the machine's cores (100 = all busy). */
  busyPct: number;
}

/** Bare proxy and rate-limited gateway loaded in turn, so both meet the same machine. */
export interface PairedThroughput {
  connections: number;
  durationS: number;
  rounds: Array<{ bare: LoadResult & { machine: MachineCpu }; gateway: LoadResult & { machine: MachineCpu }; ratio: number }>;
  medianRatio: number;
  /** Medians over the rounds of each side's machine CPU per request. */
  machine: { bare: MachineCpu['perRequest']; gateway: MachineCpu['perRequest'] };
  /**
   * What the machine allows: the ratio a gateway would reach if it cost no more CPU than the
   * bare proxy while its request-log records still cost DynamoDB Local what they cost here
   * (total CPU per request sets the rate when the cores are full), and the most CPU per
   * request the gateway could use for 0.5 x.
   */
  ceilingRatio: number;
  gatewayCpuFor05: number;
}

/**
 * Issue 38 item 1 at one rate: the bare proxy and gateway-chat-full (every hot-path feature
 * on) paced at the same evenly spaced rate in turn, the bare proxy while DynamoDB Local
 * writes as many request-log records (bench/record-writer.ts), so both meet the same
 * machine. CPU per request falls as a process's rate rises (more events per wake-up, writes
 * coalesced), so only the same rate compares the code rather than the rates.
 */
export interface CpuAtRate {
  scenario: string;
  rate: number;
  durationS: number;
  rounds: Array<{ bare: LoadResult; gateway: LoadResult; cpuRatio: number }>;
  medianCpuRatio: number;
  medianCpu: { bare: number; gateway: number };
}

export interface Target {
  name: string;
  goal: string;
  measured: string;
  met: boolean;
}

export interface Results {
  date: string;
  machine: Record<string, string | number>;
  method: Record<string, string | number>;
  scenarios: Record<string, string>;
  load: LoadRow[];
  halfSaturation?: HalfSaturation;
  paired?: PairedThroughput;
  cpuAtRate?: CpuAtRate;
  streams: StreamRow[];
  rss?: { gateway: RssResult; bareProxy: RssResult; route: string; chunkDelayMs: number };
  storage: StorageRow[];
  bundles: BundleInfo[];
  coldStart: ColdStartRow[];
  /** $ per million requests in both capacity modes, from inputs measured in the cost phase. */
  cost?: CostResults;
  /** On-demand memory per endpoint group from CPU per request and cold start. */
  rightSizing?: RightSizingRow[];
  /** DynamoDB writes by partition key, scaled to 10,000 req/s of one workspace (issue 37). */
  heat?: HeatResults;
  /** Lines per second through the gateway's own batch engine (issue 35). */
  batch?: BatchResult;
  /** The open benchmarks' figures against the bare proxy (issue 38 item 3). */
  openHarness?: OpenHarnessResults;
  targets: Target[];
  durationS: number;
}

const fmt = (v: number | undefined, d = 2) => (v === undefined || Number.isNaN(v) ? 'n/a' : v.toFixed(d));
const signed = (v: number, d = 2) => (Number.isNaN(v) ? 'n/a' : `${v >= 0 ? '+' : ''}${v.toFixed(d)}`);

function table(head: string[], rows: Array<Array<string | number>>): string {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

export function loadTable(rows: LoadRow[], latency: Latency): string {
  return table(
    ['scenario', 'conc.', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'added p50', 'added p99', 'errors', 'server CPU ms/req', 'load avg'],
    rows
      .filter((r) => r.latencyMs === latency)
      .map((r) => [
        r.scenario,
        r.connections,
        r.rps,
        fmt(r.p50),
        fmt(r.p90),
        fmt(r.p99),
        signed(r.addedP50),
        signed(r.addedP99),
        r.errors,
        fmt(r.serverCpuMsPerReq, 3),
        r.loadAvg,
      ]),
  );
}

export function streamTable(rows: StreamRow[]): string {
  // Issue 38 item 2: each gateway's TTFB added against what the bare proxy adds in the same run.
  const bareAdded = rows.find((r) => r.scenario === 'bare-proxy')?.ttfbAddedP50;
  const toBare = (r: StreamRow) => (r.scenario.startsWith('gateway') && bareAdded && bareAdded > 0 ? `${fmt(r.ttfbAddedP50 / bareAdded)} x` : '');
  return table(
    [
      'scenario',
      'TTFB p50 ms',
      'TTFB p90',
      'TTFB added',
      'added / bare proxy added',
      'total p50 ms',
      'total p90',
      'total added',
      `conc. TTFB p50`,
      'conc. total p50',
      'errors',
    ],
    rows.map((r) => [
      r.scenario,
      fmt(r.ttfbP50),
      fmt(r.ttfbP90),
      signed(r.ttfbAddedP50),
      toBare(r),
      fmt(r.totalP50),
      fmt(r.totalP90),
      signed(r.totalAddedP50),
      fmt(r.concurrentTtfbP50),
      fmt(r.concurrentTotalP50),
      r.errors,
    ]),
  );
}

export function rssTable(rss: NonNullable<Results['rss']>): string {
  const row = (name: string, r: RssResult) => [
    name,
    r.streams,
    fmt(r.beforeMb, 1),
    fmt(r.allOpenMb, 1),
    fmt(r.peakMb, 1),
    fmt(r.afterMb, 1),
    fmt(r.perStreamKb, 1),
    `${r.completed}/${r.streams}`,
    r.medianStreamMs,
  ];
  return table(
    ['process', 'streams', 'RSS before MB', 'RSS all open MB', 'RSS peak MB', 'RSS after MB', 'KB / stream', 'completed', 'median stream ms'],
    [row('gateway (unified chat, OpenAI stream)', rss.gateway), row('bare proxy', rss.bareProxy)],
  );
}

export function storageTable(rows: StorageRow[]): string {
  const fmtCounts = (c: Record<string, number>) =>
    Object.entries(c)
      .map(([k, v]) => `${k.replace(/Command$/, '')} ${v}`)
      .join(', ') || 'none';
  return table(
    ['scenario', 'requests', 'reads / req', 'writes / req', 'warm window commands', 'first request'],
    rows.map((r) => [r.scenario, r.requests, fmt(r.readsPerRequest, 3), fmt(r.writesPerRequest, 3), fmtCounts(r.commands), fmtCounts(r.firstRequest)]),
  );
}

export function coldTable(rows: ColdStartRow[], bundles: BundleInfo[]): string {
  return table(
    [
      'function',
      'cold-start code KB',
      'all code KB',
      'map KB',
      'import ms',
      'import ms (no maps)',
      'ready ms (process start)',
      'first response ms',
      'first invocation ms',
      'RSS MB',
      'status',
      'largest parts (KB)',
    ],
    rows.map((r) => {
      const b = bundles.find((x) => x.name === r.name)!;
      return [
        r.name,
        fmt(r.sizeKb, 1),
        fmt(b.totalKb, 1),
        fmt(b.mapKb, 1),
        fmt(r.importMs, 1),
        fmt(r.importNoMapsMs, 1),
        fmt(r.initMs, 1),
        fmt(r.firstResponseMs, 1),
        fmt(r.firstInvocationMs, 1),
        fmt(r.rssMb, 1),
        (r.status ? String(r.status) : '-') + (r.error ? ` (${r.error.slice(0, 40)})` : ''),
        b.top.map((t) => `${t.source} ${t.kb}`).join(', '),
      ];
    }),
  );
}

export function targetsTable(targets: Target[]): string {
  return table(
    ['target (issue 12, item 5)', 'goal', 'measured', 'met'],
    targets.map((t) => [t.name, t.goal, t.measured, t.met ? 'yes' : '**no**']),
  );
}

export function renderTables(r: Results): string {
  const parts = [
    '### Targets',
    targetsTable(r.targets),
    '### Throughput and latency, JSON, upstream latency 0 ms',
    loadTable(r.load, 0),
    '### Throughput and latency, JSON, upstream latency 50 ms',
    loadTable(r.load, 50),
  ];
  if (r.paired) {
    const p = r.paired;
    parts.push(
      `### Throughput, bare proxy and gateway in turn (gateway-proxy-ratelimit, upstream latency 0 ms, ${p.connections} connections, ${p.durationS} s each)`,
      table(
        [
          'round',
          'bare proxy req/s',
          'gateway req/s',
          'gateway / bare proxy',
          'bare proxy CPU ms/req',
          'gateway CPU ms/req',
          'cores busy (bare proxy / gateway)',
        ],
        p.rounds.map((x, i) => [
          i + 1,
          x.bare.rps,
          x.gateway.rps,
          fmt(x.ratio),
          fmt(x.bare.serverCpuMsPerReq, 3),
          fmt(x.gateway.serverCpuMsPerReq, 3),
          `${x.bare.machine.busyPct} % / ${x.gateway.machine.busyPct} %`,
        ]),
      ),
      `Median ratio: ${fmt(p.medianRatio)} x.`,
      "CPU time per request of every process on the machine (ms, median of the rounds; DynamoDB Local until it has written the round's last records):",
      table(
        ['process', 'bare proxy rounds', 'gateway rounds'],
        [
          ['load client (autocannon)', fmt(p.machine.bare.loadClient, 3), fmt(p.machine.gateway.loadClient, 3)],
          ['fake provider', fmt(p.machine.bare.fake, 3), fmt(p.machine.gateway.fake, 3)],
          ['bare proxy / gateway', fmt(p.machine.bare.server, 3), fmt(p.machine.gateway.server, 3)],
          ['DynamoDB Local', fmt(p.machine.bare.emulator, 3), fmt(p.machine.gateway.emulator, 3)],
          ['total', fmt(p.machine.bare.total, 3), fmt(p.machine.gateway.total, 3)],
        ],
      ),
      `With the cores full, the rate is set by the total. A gateway that cost no more CPU than the bare proxy, with the other processes as measured ` +
        `(its request-log records in DynamoDB Local included), would reach ${fmt(p.ceilingRatio)} x here. ` +
        (p.gatewayCpuFor05 > 0
          ? `0.5 x needs the gateway at or below ${fmt(p.gatewayCpuFor05, 3)} ms of CPU per request, against the bare proxy's ${fmt(p.machine.bare.server, 3)} ms.`
          : `0.5 x is out of reach here even for a gateway that used no CPU at all: the other processes of its rounds alone use more than twice the bare proxy rounds' total.`),
    );
  }
  if (r.cpuAtRate) {
    const c = r.cpuAtRate;
    parts.push(
      `### CPU per request at one rate: bare proxy and ${c.scenario} in turn (${c.rate} req/s evenly spaced, ${c.durationS} s each)`,
      table(
        ['round', 'bare proxy req/s', 'gateway req/s', 'bare proxy CPU ms/req', 'gateway CPU ms/req', 'gateway / bare proxy'],
        c.rounds.map((x, i) => [i + 1, x.bare.rps, x.gateway.rps, fmt(x.bare.serverCpuMsPerReq, 3), fmt(x.gateway.serverCpuMsPerReq, 3), fmt(x.cpuRatio)]),
      ),
      `Medians: bare proxy ${fmt(c.medianCpu.bare, 3)} ms, gateway ${fmt(c.medianCpu.gateway, 3)} ms of CPU per request; ratio ${fmt(c.medianCpuRatio)} x (median of the rounds' ratios). ` +
        'The bare proxy ran while DynamoDB Local wrote as many request-log records per second as the gateway causes.',
    );
  }
  if (r.halfSaturation) {
    const h = r.halfSaturation;
    parts.push(
      '### p99 at half of saturation',
      table(
        ['scenario', 'rate req/s (evenly spaced)', 'achieved req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'added p50', 'added p99', 'server CPU ms/req'],
        [
          ['direct-openai', h.rate, h.direct.rps, fmt(h.direct.p50), fmt(h.direct.p90), fmt(h.direct.p99), '', '', fmt(h.direct.serverCpuMsPerReq, 3)],
          [
            'gateway-proxy-ratelimit',
            h.rate,
            h.gateway.rps,
            fmt(h.gateway.p50),
            fmt(h.gateway.p90),
            fmt(h.gateway.p99),
            signed(h.addedP50),
            signed(h.addedP99),
            fmt(h.gateway.serverCpuMsPerReq, 3),
          ],
          ...(h.floor
            ? [
                [
                  'bare-proxy',
                  h.rate,
                  h.floor.bare.rps,
                  fmt(h.floor.bare.p50),
                  fmt(h.floor.bare.p90),
                  fmt(h.floor.bare.p99),
                  signed(h.floor.bare.p50 - h.direct.p50),
                  signed(h.floor.addedP99),
                  fmt(h.floor.bare.serverCpuMsPerReq, 3),
                ],
                [
                  'bare-proxy, DynamoDB Local writing as many request-log records',
                  h.rate,
                  h.floor.bareWithRecords.rps,
                  fmt(h.floor.bareWithRecords.p50),
                  fmt(h.floor.bareWithRecords.p90),
                  fmt(h.floor.bareWithRecords.p99),
                  signed(h.floor.bareWithRecords.p50 - h.direct.p50),
                  signed(h.floor.addedP99WithRecords),
                  fmt(h.floor.bareWithRecords.serverCpuMsPerReq, 3),
                ],
              ]
            : []),
        ],
      ),
      `Saturation (best req/s of gateway-proxy-ratelimit at 0 ms): ${h.saturationRps} req/s; half: ${h.rate} req/s.`,
    );
    if (h.direct.sched && h.gateway.sched) {
      const names = [...new Set([h.direct, h.gateway, h.floor?.bare, h.floor?.bareWithRecords].flatMap((run) => Object.keys(run?.sched ?? {})))];
      const share = (s: SchedShare | undefined) => (s ? `${s.cpuPct} % / ${s.waitingPct} %` : '');
      parts.push(
        "Each process during the paced runs, % of wall time: on a CPU / runnable but waiting for one (2 cores = 200 %; `/proc/<pid>/task/*/schedstat`, the gateway's and the fake's JavaScript thread only):",
        table(
          ['paced run', ...names],
          [
            ['direct-openai', ...names.map((n) => share(h.direct.sched![n]))],
            ['gateway-proxy-ratelimit', ...names.map((n) => share(h.gateway.sched![n]))],
            ...(h.floor
              ? [
                  ['bare-proxy', ...names.map((n) => share(h.floor!.bare.sched?.[n]))],
                  ['bare-proxy + records', ...names.map((n) => share(h.floor!.bareWithRecords.sched?.[n]))],
                ]
              : []),
          ],
        ),
      );
    }
  }
  parts.push('### Streaming (SSE, upstream latency 0 ms)', streamTable(r.streams));
  if (r.rss)
    parts.push(`### RSS under ${r.rss.gateway.streams} concurrent streams (${r.rss.route}, fake chunk delay ${r.rss.chunkDelayMs} ms)`, rssTable(r.rss));
  parts.push('### Storage calls per request (warm path)', storageTable(r.storage));
  parts.push(
    '### Cold start (production bundles, fresh node process per sample, medians)',
    coldTable(r.coldStart, r.bundles),
    'Workflow workers (`worker:…`) take Step Functions / SQS events: only their import is timed.',
  );
  if (r.openHarness) parts.push("### The open harnesses' figures, against the bare proxy (issue 38 item 3)", renderOpenHarness(r.openHarness));
  if (r.batch) parts.push("### Batch: the gateway's own engine (issue 35, fake OpenAI at 0 ms)", renderBatch(r.batch));
  if (r.heat) parts.push('### Heat: DynamoDB write units by partition key (issue 37)', renderHeat(r.heat));
  return `${parts.join('\n\n')}\n`;
}
